"""planning.capacity against the physical ceiling (config/domain/physics.py): an assumption above it is refused at
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
        "ceiling of one ml.g5.xlarge, 204/min at 100 % utilisation (204/min for conversations at batch 88 = 60 s ÷ "
        "(170 ms prefill + 123 ms decode) a request: prefill 706 uncached tokens (1,171 cached) at 70.0 TFLOPS; "
        "decode 203 tokens × 53.4 ms a step ÷ 88, a step reading 5.3 GiB of weights + 88 × 2,006 tokens × 128 KiB "
        "of KV cache = 28.82 GB at 540 GB/s usable (memory-bound); single turns 454/min; engine "
        "llama-3-8b-instruct-awq, config/domain/workload.yaml): no instance serves more than its GPU can compute and read; "
        "allowed: at most 204, e.g. 169 with concurrent_sequences 88 (83 % calibrated (the lowest measured ÷ "
        "ceiling of the 1 published run(s) within the 500 ms TTFT objective: a10g-fp16-c16, "
        "config/domain/calibration.yaml)), or measure it (`bin/loadtest ENV --variant NAME --write-config`)"
    ]


def test_an_assumption_at_the_ceiling_passes(problems):
    # 20 sequences: the ceiling at that batch is 159.4/min; the KV cache holds 20 at the p95 context.
    assert problems(_capacity(**{"ml.g5.xlarge": {"requests_per_minute": 159, "concurrent_sequences": 20}})) == []
    assert problems(_capacity(**{"ml.g5.xlarge": {"requests_per_minute": 160, "concurrent_sequences": 20}}))


def test_a_smaller_batch_lowers_the_ceiling_below_an_assumption(problems):
    """The ceiling is computed at the assumed concurrent_sequences: at 4 sequences a decode step reads the
    weights for 4 tokens only, and ml.g6.xlarge's default 84/min no longer fits under it."""
    found = problems(_capacity(**{"ml.g6.xlarge": {"requests_per_minute": 84, "concurrent_sequences": 4}}))
    assert [f for f in found if f.startswith("planning.capacity.ml.g6.xlarge.requests_per_minute: assumed 84 ")], found


def test_a_measured_figure_above_the_ceiling_is_a_warning_not_a_refusal(tmp_path):
    raw = read_yaml(ENVIRONMENTS_DIR / "prod.yaml")
    raw.setdefault("planning", {})["capacity"] = {"ml.g5.xlarge": {**SEEDS, "measured": MEASURED}}
    path = tmp_path / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    cfg = load_config_file(path, "prod")
    warnings = measured_capacity_warnings(cfg, load_catalog())
    suspect = [w for w in warnings if "suspect measurement" in w]
    assert len(suspect) == 1
    assert suspect[0].startswith(
        "prod: planning.capacity.ml.g5.xlarge is a suspect measurement: 1,200/min is above the 204/min physical "
        "ceiling (204/min for conversations at batch 88 = 60 s ÷ (170 ms prefill + 123 ms decode) a request"
    )
    assert suspect[0].endswith(
        "; measured: 1,200/min on staging/canary 2026-11-25, image v0.1.0 (answered within TTFT p95 <= 500 ms). Check the report "
        "(shorter answers than config/domain/workload.yaml's, or a rate divided by too few instances) and re-measure "
        "before planning on it"
    )
    # The other type keeps its assumption: an entry in the file replaces the assumption for its type only.
    assert cfg.planning.capacity["ml.g6.xlarge"].requests_per_minute == 77


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
