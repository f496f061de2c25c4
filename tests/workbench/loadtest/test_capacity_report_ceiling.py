"""capacity.json and capacity.md give the measured instance type's physical ceiling (config/domain/physics.py)
beside the answer, and call an answer above it a suspect measurement."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.loadtest.report import markdown, physical_ceiling

ENGINE = {"model": "llama-3-8b-instruct-awq", "max_num_seqs": 128}
VARIANT = {"kind": "sagemaker", "environment": "staging", "endpoint": "e", "variant": "canary",
           "image_tag": "v0.1.0", "instance_type": "ml.g5.xlarge", "engine": ENGINE}  # fmt: skip


def record(answer: float | None, target: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests_per_minute_per_instance": answer,
        "concurrent_requests_per_instance_at_slo": 18.0,
        "complete": True,
        "stopped": "objective broken",
        "instances": 1,
        "slo": {"ttft_p95_ms": 500.0, "max_error_percent": 1.0},
        "workload": {"source": "config/domain/workload.yaml"},
        "target": target,
        "measured_at": "2026-11-25T03:00:00+00:00",
        "physical_ceiling": physical_ceiling(target, 18.0),
        "steps": [],
    }


def test_a_variant_target_gets_its_instance_types_ceiling_at_the_batch_it_ran():
    found = physical_ceiling(VARIANT, 17.2)  # 18 sequences in flight at the answer, rounded up
    assert found is not None
    assert (found["instance_type"], found["batch"], found["bound"]) == (
        "ml.g5.xlarge",
        18,
        "decode-heavy, decode memory-bound",
    )
    assert found["requests_per_minute"] == pytest.approx(154.5, abs=0.1)  # conversations, the default
    assert found["single_turn_requests_per_minute"] > found["requests_per_minute"]
    assert found["how"].startswith("154/min for conversations at batch 18 = 60 s ÷ (170 ms prefill + ")
    single = physical_ceiling(VARIANT, 17.2, "single")
    assert single is not None and single["requests_per_minute"] == found["single_turn_requests_per_minute"]
    text = markdown(record(125.0, VARIANT))
    assert (
        "- physical ceiling of one ml.g5.xlarge: 154/min at 100 % utilisation for config/domain/workload.yaml "
        "(conversations) (154/min for conversations at batch 18" in text
    )
    assert "; the answer is 81 % of it\n" in text


def test_an_answer_above_the_ceiling_is_called_suspect():
    assert "the answer is 777 % of it: **above the ceiling, a suspect measurement**" in markdown(
        record(1200.0, VARIANT)
    )


def test_a_url_target_has_no_known_ceiling():
    target = {"kind": "url", "url": "http://127.0.0.1:8080"}
    assert physical_ceiling(target) is None
    assert "- physical ceiling: not known (the target does not say its instance type and engine)" in markdown(
        record(250.0, target)
    )
    assert physical_ceiling({**VARIANT, "instance_type": "ml.trn1.2xlarge"}) is None
