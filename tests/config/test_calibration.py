"""The ceiling (config/domain/physics.py) against published measurements (config/domain/calibration.yaml): none may be
above the model's ceiling for it (a ceiling below a real run is a wrong model), the efficiencies are
recomputed, the table in docs/how-to/measure-capacity.md shows them, and removing a measurement fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from config.domain.calibration import SLO_TTFT_MS, assumed_share, calibrate, measurements
from config.loader import load_catalog

ROOT = Path(__file__).resolve().parents[2]
# Every published run the calibration stands on. A row may be added (add it here too); none may go.
EXPECTED = {"a10g-fp16-c16", "a10g-fp16-c64", "2xa10g-fp16-sharegpt", "a100-bf16-c1", "a100-bf16-c8"}


@pytest.fixture(scope="module")
def calibrated():
    return calibrate(load_catalog())


def test_no_measurement_has_been_removed():
    assert {m.id for m in measurements()} >= EXPECTED


def test_every_measurement_is_at_or_below_the_models_ceiling(calibrated):
    above = [
        f"{c.measurement.id}: {c.measurement.requests_per_minute:.1f}/min > ceiling {c.ceiling.requests_per_minute:.1f}"
        for c in calibrated
        if c.measurement.requests_per_minute > c.ceiling.requests_per_minute
    ]
    assert above == []


def test_the_efficiencies_are_measured_over_ceiling(calibrated):
    by_id = {c.measurement.id: c for c in calibrated}
    c16 = by_id["a10g-fp16-c16"]
    # 290 tokens/s over 150 tokens a request = 116/min; the ceiling for 550 in / 150 out at batch 16 on an A10G.
    assert c16.measurement.requests_per_minute == pytest.approx(116.0)
    assert c16.efficiency == pytest.approx(116.0 / c16.ceiling.requests_per_minute)
    assert c16.efficiency == pytest.approx(0.828, abs=0.001)
    # Beyond the objective, the same GPU delivers a smaller share: queueing, not physics.
    assert by_id["a10g-fp16-c64"].efficiency < c16.efficiency


def test_the_assumed_share_is_the_lowest_efficiency_within_the_objective(calibrated):
    within = [
        c for c in calibrated if c.measurement.mean_ttft_ms is not None and c.measurement.mean_ttft_ms <= SLO_TTFT_MS
    ]
    assert within
    assert assumed_share(load_catalog()).share == min(c.efficiency for c in within)


def test_a_measurement_above_the_ceiling_would_be_caught():
    """The check can fail: a run claiming 3x the c16 tokens/s is above the model's ceiling."""
    first = measurements()[0]
    inflated = first.model_copy(update={"output_tokens_per_second": 3 * first.output_tokens_per_second})
    found = calibrate(load_catalog(), (inflated,))[0]
    assert found.measurement.requests_per_minute > found.ceiling.requests_per_minute


def test_docs_capacity_md_shows_every_measurement_with_its_ceiling_and_efficiency(calibrated):
    text = (ROOT / "docs" / "explanation" / "capacity-model.md").read_text()
    section = text[text.index("## Calibration") :]
    for c in calibrated:
        row = next((line for line in section.splitlines() if line.startswith(f"| {c.measurement.id} |")), None)
        assert row is not None, c.measurement.id
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert f"{c.ceiling.requests_per_minute:,.1f}" in cells, (c.measurement.id, cells)
        assert f"{100 * c.efficiency:.0f} %" in cells, (c.measurement.id, cells)
    assert re.search(r"assumed share[^\n]*83 %", section)
