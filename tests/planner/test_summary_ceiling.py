"""The plan says what capacity it stands on beside the instance type's physical ceiling (config/physics.py)."""

from __future__ import annotations

import pytest

from config.loader import load_catalog, load_environment
from planner.build import build_plan
from planner.reference_week import reference_week
from planner.summary import render_summary


@pytest.fixture(scope="module")
def summary() -> str:
    return render_summary(build_plan(load_environment("dev"), load_catalog(), reference_week()))


def test_the_summary_gives_each_assumed_capacity_as_a_share_of_its_ceiling(summary: str) -> None:
    assert (
        "- capacity per ml.g5.xlarge: 274 requests/min at the SLO, 20 sequences; assumed: 274/min, 50 % of the "
        "549/min physical ceiling (config/physics.py), never measured (`ops capacity`)" in summary
    )
    assert (
        "- capacity per ml.g6.xlarge: 303 requests/min at the SLO, 22 sequences; assumed: 303/min, 50 % of the 606/min"
        in summary
    )
