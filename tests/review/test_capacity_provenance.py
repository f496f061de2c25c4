"""The review's plan section says what capacity each plan stands on: measured or the seeds' assumption."""

from __future__ import annotations

import shutil
from pathlib import Path

from capacity.record import record_measurement
from review.capacity import compare_plans

REPO = Path(__file__).resolve().parents[2]
MEASURED = {
    "requests_per_minute_per_instance": 950.0,
    "concurrent_requests_per_instance_at_slo": 40.0,
    "measured_at": "2026-11-25T03:00:00+00:00",
    "slo": {"ttft_p95_ms": 500.0},
    "target": {"kind": "sagemaker", "environment": "staging", "variant": "canary", "image_tag": "v0.1.0"},
}


def test_an_unchanged_config_still_says_its_capacity_is_assumed():
    prod = REPO / "config" / "environments" / "prod.yaml"
    comparison = compare_plans("prod", prod, prod)
    assert not comparison.changed
    assert "stands on ml.g5.xlarge: assumed: 1,200/min, the seeds' figure, never measured" in comparison.markdown


def test_a_recorded_measurement_shows_on_the_head_side(tmp_path):
    head = tmp_path / "prod.yaml"
    shutil.copy(REPO / "config" / "environments" / "prod.yaml", head)
    record_measurement(head, "ml.g5.xlarge", MEASURED, Path("capacity-out/x/capacity.json"))
    comparison = compare_plans("prod", REPO / "config" / "environments" / "prod.yaml", head)
    assert "ml.g5.xlarge (base): assumed: 1,200/min" in comparison.markdown
    assert "ml.g5.xlarge (head): measured: 950/min on staging/canary 2026-11-25, image v0.1.0" in comparison.markdown
