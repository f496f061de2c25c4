"""The plan says what capacity it stands on beside the instance type's physical ceiling (config/physics.py)."""

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
        "- capacity per ml.g5.xlarge: 132 requests/min at the SLO, 20 sequences; assumed: 132/min, 83 % of the "
        "159/min physical ceiling at batch 20 (config/physics.py), never measured (`bin/loadtest`); ceiling "
        "(decode-heavy, decode memory-bound): 159/min for conversations at batch 20 = 60 s ÷ (170 ms prefill + "
        "206 ms decode) a request" in summary
    )
    assert (
        "- capacity per ml.g6.xlarge: 84 requests/min at the SLO, 20 sequences; assumed: 84/min, 82 % of the 102/min"
        in summary
    )
    assert "single turns 279/min; assumed share 83 % calibrated (the lowest measured ÷ ceiling" in summary
