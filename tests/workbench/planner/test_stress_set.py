"""Issue 52 items 1 and 2 on prod: the written configuration holds every scenario of the stress set, the
cheapest one at the bare assumptions does not, and every window's maximum covers its fallback night."""

from __future__ import annotations

import pytest

from config.loader import load_catalog, load_environment
from workbench.planner.build import PlanError, build_plan, stress_rows
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.stress import stress_set
from workbench.planner.tune import Point, apply, evaluate, fallback_maxima
from workbench.planner.verdict import judge

CATALOG = load_catalog()
PROD = load_environment("prod", against_deployed=False)
TRAFFIC = traffic_of(PROD)
# The cheapest point `bin/plan prod --tune` found at the bare assumptions (its report's "Cheapest at the bare
# assumptions", $31,060 a month, from main's config): the point a tuner without the stress set would write.
BARE = Point(0.55, ((26, 37), (41, 66), (39, 64), (18, 22), (2, 10), (3, 4)), (3,), 0)


@pytest.fixture(scope="module")
def plan():
    return build_plan(PROD, CATALOG, TRAFFIC)


def test_the_written_config_is_met_in_every_default_scenario(plan):
    keys = [row.key for row in plan.stress]
    assert keys[:2] == ["capacity", "provisioning"] and "affinity" in keys
    assert sum(key.startswith("without-") for key in keys) == len({p.name for p in TRAFFIC.peaks})
    assert all(row.passed for row in plan.stress)
    assert judge(plan).met


def test_the_config_tuned_at_the_bare_assumptions_fails_a_scenario(plan):
    bare = evaluate(PROD, CATALOG, TRAFFIC, BARE)
    assert bare.meets  # at the bare assumptions it is within the budget ...
    stresses, _ = stress_set(PROD, CATALOG, TRAFFIC)
    rows = stress_rows(apply(PROD, BARE), CATALOG, TRAFFIC, stresses, stop_at_first_failure=True)
    assert not rows[-1].passed  # ... and fails at least one scenario
    assert bare.monthly_cost_usd < plan.scenarios["configured"].total.monthly_cost_usd  # the margin costs


def test_each_windows_maximum_covers_its_fallback_night():
    windows = [w for s in PROD.autoscaling.values() for w in s.schedules]
    for window, needed in zip(windows, fallback_maxima(PROD, CATALOG, TRAFFIC), strict=True):
        assert (window.max_capacity or 0) >= needed, window.name


def test_less_margin_needs_a_reason_the_plan_prints():
    less = PROD.planning.stress.model_copy(update={"capacity_low_percent": 10})
    cfg = PROD.model_copy(update={"planning": PROD.planning.model_copy(update={"stress": less})})
    with pytest.raises(
        PlanError, match=r"planning\.stress\.capacity_low_percent: less margin .* planning\.stress\.reason"
    ):
        build_plan(cfg, CATALOG, TRAFFIC)
    reason = "measured on staging within 5 %, INC-12"
    given = less.model_copy(update={"reason": reason})
    cfg = PROD.model_copy(update={"planning": PROD.planning.model_copy(update={"stress": given})})
    stresses, notes = stress_set(cfg, CATALOG, TRAFFIC)
    assert stresses[0].title == "capacity −10 %" and f"less margin chosen: {reason}" in notes


def test_a_routing_without_affinity_has_no_affinity_to_lose():
    least = PROD.model_copy(update={"routing_strategy": "LEAST_OUTSTANDING_REQUESTS"})
    stresses, notes = stress_set(least, CATALOG, TRAFFIC)
    assert "affinity" not in [s.key for s in stresses]
    assert any("keeps no conversation's cache to lose" in note for note in notes)
