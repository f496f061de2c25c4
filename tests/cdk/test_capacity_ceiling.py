"""planning.capacity against the physical ceiling (config/physics.py): an assumption above it is refused at
synth with both numbers and the arithmetic; a measurement above it is a warning; every catalog type has a GPU."""

from __future__ import annotations

import copy

import pytest
from ruamel.yaml import YAML

from config import ConfigError, load_catalog, load_config_file
from config.checks.capacity import measured_capacity_warnings
from config.loader import CATALOG_FILE, ENVIRONMENTS_DIR, read_yaml, validate_catalog

SEEDS = {"requests_per_minute": 1200, "concurrent_sequences": 88}  # the seeds' figure, never measured
MEASURED = {
    "where": "staging/canary",
    "measured_at": "2026-11-25T03:00:00+00:00",
    "image_tag": "v0.1.0",
    "slo_ttft_p95_ms": 500,
}


def _capacity(**entries: dict):
    return lambda raw: raw.setdefault("planning", {}).update(capacity=entries)


def test_the_seeds_assumed_1200_is_refused_with_both_numbers_and_the_arithmetic(problems):
    found = problems(_capacity(**{"ml.g5.xlarge": SEEDS}))
    # The seeds' 88 sequences are also more than the KV cache holds at the conversations' p95 context.
    kv = [f for f in found if f.startswith("variants[")]
    assert kv and all("concurrent_sequences 88" in f for f in kv)
    assert [f for f in found if not f.startswith("variants[")] == [
        "planning.capacity.ml.g5.xlarge.requests_per_minute: assumed 1,200 requests/min is above the physical "
        "ceiling of one ml.g5.xlarge, 549/min at 100 % utilisation (549/min compute-bound: 70 TFLOPS dense FP16 ÷ "
        "7.65 TFLOP a request (2 × 8.0 B params × 478 tokens: 275 uncached prompt + 203 generated); memory bound "
        "1,213/min; engine llama-3-8b-instruct-awq, max_num_seqs 128, capacity/workload.yaml): no instance serves "
        "more than its GPU can compute and read; allowed: at most 549, e.g. 274 with concurrent_sequences 20 "
        "(50 % of the ceiling, config.physics.ASSUMED_UTILISATION), or measure it (`bin/ops capacity ENV "
        "--variant NAME --write-config`)"
    ]


def test_an_assumption_at_the_ceiling_passes(problems):
    # 30 sequences: within what the KV cache holds at the conversations' p95 context (32), so only the rate is judged.
    assert problems(_capacity(**{"ml.g5.xlarge": {"requests_per_minute": 549, "concurrent_sequences": 30}})) == []
    assert problems(_capacity(**{"ml.g5.xlarge": {"requests_per_minute": 550, "concurrent_sequences": 30}}))


def test_a_smaller_batch_lowers_a_memory_bound_ceiling_below_the_default_assumption(problems):
    """ml.g6.xlarge is memory-bound: at 16 sequences a decode step reads the weights for 16 tokens only."""
    found = problems(lambda raw: raw["engine"].update(max_num_seqs=16))
    assert [f for f in found if f.startswith("planning.capacity.ml.g6.xlarge.requests_per_minute: assumed 303 ")], found


def test_a_measured_figure_above_the_ceiling_is_a_warning_not_a_refusal(tmp_path):
    raw = read_yaml(ENVIRONMENTS_DIR / "prod.yaml")
    raw.setdefault("planning", {})["capacity"] = {"ml.g5.xlarge": {**SEEDS, "measured": MEASURED}}
    path = tmp_path / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    cfg = load_config_file(path, "prod")
    warnings = measured_capacity_warnings(cfg, load_catalog())
    suspect = [w for w in warnings if "suspect measurement" in w]
    assert suspect == [
        "prod: planning.capacity.ml.g5.xlarge is a suspect measurement: 1,200/min is above the 549/min physical "
        "ceiling (549/min compute-bound: 70 TFLOPS dense FP16 ÷ 7.65 TFLOP a request (2 × 8.0 B params × 478 "
        "tokens: 275 uncached prompt + 203 generated); memory bound 1,213/min); measured: 1,200/min on "
        "staging/canary 2026-11-25, image v0.1.0 (TTFT p95 <= 500 ms). Check the report (shorter answers than "
        "capacity/workload.yaml's, or a rate divided by too few instances) and re-measure before planning on it"
    ]
    # The other type keeps its assumption: an entry in the file replaces the assumption for its type only.
    assert cfg.planning.capacity["ml.g6.xlarge"].requests_per_minute == 303


def test_every_instance_type_in_the_catalog_names_a_known_gpu():
    raw = copy.deepcopy(read_yaml(CATALOG_FILE))
    raw["instance_types"]["ml.g5.xlarge"]["gpu"] = "A10"
    with pytest.raises(ConfigError) as error:
        validate_catalog(raw, "config/catalog.yaml")
    assert error.value.problems == [
        (
            "instance_types.ml.g5.xlarge.gpu",
            "'A10' is not in gpus (did you mean 'A10G'?); known: A10G, L4, T4, A100 (add its fp16_dense_tflops, "
            "memory_bandwidth_gb_per_s and source)",
        )
    ]
    assert validate_catalog(read_yaml(CATALOG_FILE), "config/catalog.yaml").gpus.keys() >= {"A10G", "L4"}
