"""config/domain/physics.py against figures computed by hand, and the assumed capacity held to its ceiling and
to the calibrated share (config/domain/calibration.py)."""

from __future__ import annotations

import math

import pytest

from config import load_environment
from config.domain.calibration import assumed_capacity, assumed_share
from config.domain.physics import Hardware, ceiling, instance_ceiling, roofline
from config.domain.workload import clipped_lognormal_mean, clipped_lognormal_moment, default_tokens, fixed_tokens
from config.loader import load_catalog
from config.schema import ASSUMED_CAPACITY, Catalog

MODEL = "llama-3-8b-instruct-awq"
GIB = 1024**3


def test_single_turns_come_from_the_workload_file():
    single, conversations = default_tokens(3496)
    # 400-token system prompt cached; user turn uniform 150..400 plus 15 tokens of chat framing prefilled.
    assert (single.cached, single.uncached) == (400, 290)
    assert single.generated == pytest.approx(203.03, abs=0.01)  # log-normal median 180, sigma 0.5, clipped
    assert conversations is not None and conversations.name == "conversations"
    # Conversations carry their history: more cached, more uncached (trimmed turns), a longer decode context.
    assert conversations.cached > single.cached and conversations.decode_context > 2 * single.decode_context


def test_the_clipped_moments_match_a_sum_over_whole_tokens():
    """What the workload sends: each draw rounded to a whole token, then clipped to 16..600."""
    mu, sigma = math.log(180), 0.5

    def cdf(x: float) -> float:
        return 0.5 * (1 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2)))) if x > 0 else 0.0

    for k in (1, 2):
        by_token = sum(min(max(n, 16), 600) ** k * (cdf(n + 0.5) - cdf(n - 0.5)) for n in range(600))
        by_token += 600**k * (1 - cdf(599.5))
        assert clipped_lognormal_moment(180, 0.5, 16, 600, k) == pytest.approx(by_token, rel=1e-5)
    assert clipped_lognormal_mean(180, 0.5, 1, 1e9) == pytest.approx(180 * math.exp(0.125), rel=1e-6)


def test_a_fixed_request_gives_the_hand_figures():
    """By hand: A10G at 70 TFLOPS, 600 GB/s less 10 % ECC = 540; AWQ weights 5.3 GiB; 128 KiB a token.
    550 in / 150 out at batch 16: prefill 2 × 8e9 × 550 + 4 × 32 × 4096 × 550²/2 = 8.879e12 FLOP -> 126.85 ms;
    a step reads 5.3 GiB + 16 × 625 × 131,072 B = 7.0018 GB -> 12.966 ms, 150 tokens × 12.966 / 16 = 121.56 ms;
    60 / 0.24841 s = 241.5/min."""
    catalog = load_catalog()
    hw = Hardware.of(catalog.gpus["A10G"], 1, catalog.models[MODEL])
    found = roofline(hw, fixed_tokens("by hand", 550, 150, "by hand"), 16)
    assert found.prefill_seconds == pytest.approx(0.12685, abs=1e-5)
    assert found.step_seconds == pytest.approx((5.3 * GIB + 16 * 625 * 131_072) / 540e9, rel=1e-9)
    assert found.step_bound == "memory"
    assert found.requests_per_minute == pytest.approx(241.5, abs=0.1)


def test_prefill_and_decode_times_add():
    catalog = load_catalog()
    hw = Hardware.of(catalog.gpus["A10G"], 1, catalog.models[MODEL])
    found = roofline(hw, fixed_tokens("x", 550, 150, "x"), 16)
    assert found.requests_per_minute == pytest.approx(60 / (found.prefill_seconds + found.decode_seconds))
    assert found.requests_per_minute < min(60 / found.prefill_seconds, 60 / found.decode_seconds)


def _with_gpu(catalog: Catalog, gpu: str, **change: float) -> Catalog:
    gpus = {**catalog.gpus, gpu: catalog.gpus[gpu].model_copy(update=change)}
    return catalog.model_copy(update={"gpus": gpus})


def test_bandwidth_moves_the_decode_part_and_tflops_the_prefill_part():
    catalog = load_catalog()
    before = ceiling(catalog, "ml.g5.xlarge", MODEL, 20).default
    wider = ceiling(_with_gpu(catalog, "A10G", memory_bandwidth_gb_per_s=1200), "ml.g5.xlarge", MODEL, 20).default
    assert wider.decode_seconds == pytest.approx(before.decode_seconds / 2)
    assert wider.prefill_seconds == pytest.approx(before.prefill_seconds)
    faster = ceiling(_with_gpu(catalog, "A10G", fp16_dense_tflops=140), "ml.g5.xlarge", MODEL, 20).default
    assert faster.prefill_seconds == pytest.approx(before.prefill_seconds / 2)
    assert faster.decode_seconds == pytest.approx(before.decode_seconds)


def test_a_larger_batch_raises_the_ceiling_and_the_l4_stays_below_the_a10g():
    catalog = load_catalog()
    for batch in (1, 8, 20, 64, 128):
        g5 = ceiling(catalog, "ml.g5.xlarge", MODEL, batch)
        g6 = ceiling(catalog, "ml.g6.xlarge", MODEL, batch)
        assert g6.requests_per_minute < g5.requests_per_minute  # half the bandwidth, the same measured FP16
        assert g6.single.requests_per_minute < g5.single.requests_per_minute
    assert (
        ceiling(catalog, "ml.g5.xlarge", MODEL, 32).requests_per_minute
        > ceiling(catalog, "ml.g5.xlarge", MODEL, 20).requests_per_minute
    )


def test_the_ceiling_describes_its_arithmetic():
    found = ceiling(load_catalog(), "ml.g5.xlarge", MODEL, 20)
    assert found.describe().startswith(
        "159/min for conversations at batch 20 = 60 s ÷ (170 ms prefill + 206 ms decode) a request: prefill 706 "
        "uncached tokens (1,171 cached) at 70.0 TFLOPS; decode 203 tokens × 20.3 ms a step ÷ 20, a step reading "
        "5.3 GiB of weights + 20 × 2,006 tokens × 128 KiB of KV cache = 10.95 GB at 540 GB/s usable (memory-bound)"
    )
    assert found.describe().endswith("; single turns 279/min")


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
@pytest.mark.parametrize("instance_type", sorted(ASSUMED_CAPACITY))
def test_the_assumed_capacity_is_the_calibrated_share_of_the_ceiling(env, instance_type):
    """Each environment's assumed figure: the calibrated share of the ceiling at the batch its objective
    allows (16 at 500 ms, the published evidence's cap), as ASSUMED_CAPACITY records it for that objective."""
    catalog = load_catalog()
    cfg = load_environment(env, against_deployed=False)
    assumed = cfg.planning.capacity[instance_type]
    found = instance_ceiling(cfg, catalog, instance_type, assumed.concurrent_sequences)
    share = assumed_share(catalog).share
    assert (assumed.requests_per_minute, assumed.concurrent_sequences) == assumed_capacity(found, share)
    assert assumed.measured is None
    assert assumed == ASSUMED_CAPACITY[instance_type]  # every environment: PREFIX_AWARE, 500 ms


def test_the_l4_is_assumed_below_the_a10g():
    assert ASSUMED_CAPACITY["ml.g6.xlarge"].requests_per_minute < ASSUMED_CAPACITY["ml.g5.xlarge"].requests_per_minute
