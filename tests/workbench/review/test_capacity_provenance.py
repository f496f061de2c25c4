"""The review's plan section says what capacity each plan stands on: measured or assumed, and its share of
the instance type's physical ceiling (config/domain/physics.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from workbench.loadtest.record import record_measurement
from workbench.review.capacity import compare_plans

REPO = Path(__file__).resolve().parents[3]
MEASURED = {
    "requests_per_minute_per_instance": 250.0,
    "concurrent_requests_per_instance_at_slo": 18.0,
    "measured_at": "2026-11-25T03:00:00+00:00",
    "slo": {"ttft_p95_ms": 500.0},
    "target": {"kind": "sagemaker", "environment": "staging", "variant": "canary", "image_tag": "v0.1.0"},
}


def test_an_unchanged_config_still_says_its_capacity_is_assumed():
    prod = REPO / "config" / "environments" / "prod.yaml"
    comparison = compare_plans("prod", prod, prod)
    assert not comparison.changed
    assert (
        "stands on ml.g5.xlarge: assumed: 123/min, 83 % of the 149/min physical ceiling at batch 16 "
        "(config/domain/physics.py), never measured (`bin/loadtest`); ceiling (decode-heavy, decode memory-bound): 149/min "
        "for conversations at batch 16" in comparison.markdown
    )
    assert "; assumed share 83 % calibrated (the lowest measured ÷ ceiling of the 1 published run(s)" in (
        comparison.markdown
    )


def test_a_recorded_measurement_shows_on_the_head_side(tmp_path):
    head = tmp_path / "prod.yaml"
    shutil.copy(REPO / "config" / "environments" / "prod.yaml", head)
    record_measurement(head, "ml.g5.xlarge", MEASURED, Path("capacity-out/x/capacity.json"))
    comparison = compare_plans("prod", REPO / "config" / "environments" / "prod.yaml", head)
    assert "ml.g5.xlarge (base): assumed: 123/min, 83 % of the 149/min physical ceiling" in comparison.markdown
    assert (
        "ml.g5.xlarge (head): measured: 250/min on staging/canary 2026-11-25, image v0.1.0 (answered within TTFT p95 <= 500 ms), "
        "162 % of the 154/min physical ceiling at batch 18 (config/domain/physics.py)" in comparison.markdown
    )
