"""The prod config on the reference week: the issue's targets, the baselines' order, the docs' copy."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.loader import load_catalog, load_environment
from planner.build import build_plan
from planner.doc_block import PLAN_DOC, embedded_summary, with_summary
from planner.reference_week import reference_week
from planner.summary import render_summary
from planner.verdict import judge

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_environment("prod"), load_catalog(), reference_week())


def cost(plan, key: str) -> float:
    return plan.scenarios[key].total.monthly_cost_usd


def test_no_shortfall_inside_the_peak_windows(plan) -> None:
    configured = plan.scenarios["configured"]
    assert configured.total.shortfall_minutes_in_peaks == 0
    peak_minutes = {m for _, start, end in plan.peak_windows for m in range(start, end)}
    assert len(peak_minutes) > 7 * 4 * 60  # the peaks are there: Tokyo and New York evenings, releases


def test_prod_meets_its_budget(plan) -> None:
    verdict = judge(plan)
    assert verdict.met, [check.text for check in verdict.checks if not check.passed]
    assert "### Verdict: met" in render_summary(plan)


def test_static_fleets_at_max_capacity_and_at_the_peak_side_by_side(plan) -> None:
    assert list(plan.scenarios) == ["configured", "reactive", "static-max", "static", "oracle"]
    at_max = plan.scenarios["static-max"]
    assert set(at_max.variants["primary"].in_service) == {8} and set(at_max.variants["canary"].in_service) == {8}
    assert at_max.total.shortfall_minutes == 0
    assert "| Static fleet at max_capacity |" in render_summary(plan)


def test_cost_within_a_quarter_of_the_oracle(plan) -> None:
    assert cost(plan, "configured") <= 1.25 * cost(plan, "oracle")


def test_oracle_is_the_lower_bound_and_static_the_costly_safe_choice(plan) -> None:
    assert all(cost(plan, key) >= cost(plan, "oracle") for key in plan.scenarios)
    assert plan.scenarios["oracle"].total.shortfall_minutes == 0
    assert plan.scenarios["static"].total.shortfall_minutes == 0
    assert cost(plan, "static") > cost(plan, "configured")


def test_schedules_earn_their_cost(plan) -> None:
    """Without the windows, reactive scaling alone queues inside the peaks they cover."""
    assert plan.scenarios["reactive"].total.shortfall_minutes_in_peaks > 0


def test_what_shortfall_remains_is_the_unannounced_spike(plan) -> None:
    spike = next((start, end) for name, start, end in plan.traffic_events if "spike" in name)
    series = plan.scenarios["configured"].variants["primary"]
    short = [m for m in range(len(series.demand)) if series.backlog[m] > 0 or series.rejected[m] > 0]
    assert short and all(spike[0] <= m < spike[1] for m in short)


def test_us_evening_window_follows_new_york_across_the_dst_switch(plan) -> None:
    configured = plan.scenarios["configured"]
    starts = [
        configured.time_at(e.minute)
        for e in configured.events
        if e.kind == "schedule" and e.text.startswith("us-eastern-evening-peak start")
    ]
    assert datetime(2026, 10, 31, 21, 45, tzinfo=UTC) in starts  # 17:45 EDT
    assert datetime(2026, 11, 2, 22, 45, tzinfo=UTC) in starts  # 17:45 EST
    assert all(t.minute == 45 for t in starts) and len(starts) == 7


def test_docs_show_the_current_prod_plan(plan) -> None:
    """`make plan-docs` refreshes both; this fails when a config change left them stale."""
    summary = render_summary(plan)
    assert (ROOT / "docs/plan/summary.md").read_text() == summary
    document = (ROOT / PLAN_DOC).read_text()
    assert embedded_summary(document) == embedded_summary(with_summary(document, summary))
    assert (ROOT / "docs/plan/plot.png").stat().st_size > 50_000
