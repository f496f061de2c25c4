"""The plan says what capacity it stands on beside the instance type's physical ceiling (config/domain/physics.py)."""

from __future__ import annotations

import pytest

from config.loader import load_catalog, load_environment
from workbench.planner.build import build_plan
from workbench.planner.reference_week import reference_week
from workbench.planner.summary import render_summary


@pytest.fixture(scope="module")
def summary() -> str:
    return render_summary(build_plan(load_environment("dev"), load_catalog(), reference_week()))


def test_the_summary_gives_each_assumed_capacity_as_a_share_of_its_ceiling(summary: str) -> None:
    assert (
        "- capacity per ml.g5.xlarge: 123 requests/min at the SLO, 16 sequences; assumed: 123/min, 83 % of the "
        "149/min physical ceiling at batch 16 (config/domain/physics.py), never measured (`bin/loadtest`); ceiling "
        "(decode-heavy, decode memory-bound): 149/min for conversations at batch 16 = 60 s ÷ (170 ms prefill + "
        "233 ms decode) a request" in summary
    )
    assert (
        "- capacity per ml.g6.xlarge: 77 requests/min at the SLO, 16 sequences; assumed: 77/min, 82 % of the 94/min"
        in summary
    )
    assert "single turns 248/min; assumed share 83 % calibrated (the lowest measured ÷ ceiling" in summary
