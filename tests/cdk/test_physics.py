"""config/physics.py against figures computed by hand, and the assumed capacity held to its ceiling."""

from __future__ import annotations

import math

import pytest

from config import load_environment
from config.loader import load_catalog
from config.physics import (
    ASSUMED_UTILISATION,
    WorkloadTokens,
    assumed_capacity,
    ceiling,
    clipped_lognormal_mean,
    default_workload,
    instance_ceiling,
)
from config.schema import ASSUMED_CAPACITY, Catalog

# By hand, from capacity/workload.yaml and config/catalog.yaml:
#   uncached = (150 + 400) / 2 = 275 (the 400-token system prompt is prefix-cached)
#   generated ≈ 204, the log-normal mean 180 × e^(0.5²/2) = 203.97, a little less once clipped at 600
#   ml.g5.xlarge (A10G, 70 TFLOPS): 60 × 70e12 / (2 × 8e9 × (275 + 204)) = 548/min
#   ml.g6.xlarge (L4, 300 GB/s), batch 128, context 400 + 275 + 102 = 777, 131,072 KV bytes a token:
#     128 × 300e9 / (5.3 × 2^30 + 128 × 777 × 131,072) = 2,051 tokens/s; × 60 / 204 = 603/min
HAND_G5, HAND_G6 = 548.0, 603.0


@pytest.fixture(scope="module")
def prod():
    return load_environment("prod", against_deployed=False)


def test_the_workload_tokens_come_from_the_workload_file():
    tokens = default_workload()
    assert (tokens.system, tokens.uncached) == (400, 275)
    # Unclipped mean 203.97; the mass above 600 pulled down to 600 takes off about 0.9 token.
    assert tokens.generated == pytest.approx(203.03, abs=0.01)
    assert tokens.decode_context == pytest.approx(400 + 275 + 203.03 / 2, abs=0.01)


def test_the_clipped_mean_matches_a_sum_over_whole_tokens():
    """What the workload sends: each draw rounded to a whole token, then clipped to 16..600."""
    mu, sigma = math.log(180), 0.5

    def cdf(x: float) -> float:
        return 0.5 * (1 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2)))) if x > 0 else 0.0

    by_token = sum(min(max(k, 16), 600) * (cdf(k + 0.5) - cdf(k - 0.5)) for k in range(600))
    by_token += 600 * (1 - cdf(599.5))
    assert clipped_lognormal_mean(180, 0.5, 16, 600) == pytest.approx(by_token, abs=1e-4)
    assert clipped_lognormal_mean(180, 0.5, 1, 1e9) == pytest.approx(180 * math.exp(0.125), rel=1e-6)


def test_ml_g5_xlarge_is_compute_bound_near_548(prod):
    found = instance_ceiling(prod, load_catalog(), "ml.g5.xlarge")
    assert found.bound == "compute"
    assert found.requests_per_minute == pytest.approx(HAND_G5, rel=0.005)  # 549.1 with the clipped mean
    assert found.memory_rpm == pytest.approx(1212.5, abs=1)
    assert found.describe().startswith(
        "549/min compute-bound: 70 TFLOPS dense FP16 ÷ 7.65 TFLOP a request (2 × 8.0 B params × 478 tokens: "
        "275 uncached prompt + 203 generated); memory bound 1,213/min"
    )


def test_ml_g6_xlarge_is_memory_bound_near_603(prod):
    found = instance_ceiling(prod, load_catalog(), "ml.g6.xlarge")
    assert found.bound == "memory"
    assert found.requests_per_minute == pytest.approx(HAND_G6, rel=0.01)  # 606.3 with the clipped mean
    assert found.compute_rpm == pytest.approx(949.2, abs=1)
    assert "606/min memory-bound: decode at batch 128 reads 5.3 GiB of weights + 128 × 777 tokens" in found.describe()


def test_fixed_tokens_give_the_hand_figures_exactly():
    tokens = WorkloadTokens(system=400, uncached=275, generated=204, source="by hand")
    catalog = load_catalog()
    model = "llama-3-8b-instruct-awq"
    assert ceiling(catalog, "ml.g5.xlarge", model, 128, tokens).compute_rpm == pytest.approx(548.02, abs=0.01)
    assert ceiling(catalog, "ml.g6.xlarge", model, 128, tokens).memory_rpm == pytest.approx(603.10, abs=0.01)


def _with_gpu(catalog: Catalog, gpu: str, **change: float) -> Catalog:
    gpus = {**catalog.gpus, gpu: catalog.gpus[gpu].model_copy(update=change)}
    return catalog.model_copy(update={"gpus": gpus})


def test_doubling_tflops_doubles_the_compute_bound_only(prod):
    catalog = load_catalog()
    before = instance_ceiling(prod, catalog, "ml.g5.xlarge")
    after = instance_ceiling(prod, _with_gpu(catalog, "A10G", fp16_dense_tflops=140), "ml.g5.xlarge")
    assert after.compute_rpm == pytest.approx(2 * before.compute_rpm)
    assert after.memory_rpm == pytest.approx(before.memory_rpm)
    assert after.requests_per_minute == pytest.approx(after.compute_rpm)  # 1,098 < 1,213: still compute-bound


def test_more_bandwidth_lifts_a_memory_bound_ceiling(prod):
    catalog = load_catalog()
    faster = instance_ceiling(prod, _with_gpu(catalog, "L4", memory_bandwidth_gb_per_s=600), "ml.g6.xlarge")
    assert faster.memory_rpm == pytest.approx(2 * instance_ceiling(prod, catalog, "ml.g6.xlarge").memory_rpm)
    assert faster.bound == "compute"


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
@pytest.mark.parametrize("instance_type", sorted(ASSUMED_CAPACITY))
def test_the_assumed_capacity_is_half_the_ceiling(env, instance_type):
    found = instance_ceiling(load_environment(env, against_deployed=False), load_catalog(), instance_type)
    assumed = ASSUMED_CAPACITY[instance_type]
    rate, sequences = assumed_capacity(found.requests_per_minute)
    assert (assumed.requests_per_minute, assumed.concurrent_sequences) == (rate, sequences)
    assert rate == math.floor(ASSUMED_UTILISATION * found.requests_per_minute)
    assert sequences == round(rate * 88 / 1200)  # the seeds' 88 sequences at 1,200/min: 4.4 s a request
    assert assumed.measured is None
