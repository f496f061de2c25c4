"""The prod config on the reference week: the issue's targets, the baselines' order, the docs' copy, the bad night."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.loader import load_catalog, load_environment
from planner.build import build_plan
from planner.doc_block import PLAN_DOC, embedded_summary, with_summary
from planner.outages import parse_outages
from planner.reference_week import reference_week
from planner.summary import render_summary
from planner.verdict import judge

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_environment("prod"), load_catalog(), reference_week(), with_margin=True)


def without_fallback(cfg):
    return cfg.model_copy(
        update={"variants": [v.model_copy(update={"fallback_instance_types": []}) for v in cfg.variants]}
    )


def unavailable(cfg, value: str):
    week = reference_week()
    types = list(dict.fromkeys(t for v in cfg.variants for t in v.instance_types)) or ["ml.g5.xlarge"]
    return build_plan(cfg, load_catalog(), week, outages=parse_outages([value], week, types + ["ml.g5.xlarge"]))


def cost(plan, key: str) -> float:
    return plan.scenarios[key].total.monthly_cost_usd


def test_no_shortfall_inside_the_peak_windows(plan) -> None:
    configured = plan.scenarios["configured"]
    assert configured.total.shortfall_minutes_in_peaks == 0
    peak_minutes = {m for _, start, end in plan.peak_windows for m in range(start, end)}
    assert len(peak_minutes) > 7 * 4 * 60  # the peaks are there: Tokyo and New York evenings, releases


def test_prod_serves_everyone_and_states_what_it_costs(plan) -> None:
    """Issues 31 and 42: no rejected request, no queue in a peak window, shortfall only in the unannounced
    spike (two provisioning rounds: 20 minutes). The 1.25x cost goal is not met at the assumed 132/min:
    the headroom that keeps the spike free of rejections costs 1.73x (prod.yaml, docs/scaling-and-planning.md)."""
    verdict = judge(plan)
    failed = [check.name for check in verdict.checks if not check.passed]
    assert failed == ["cost"], [check.text for check in verdict.checks if not check.passed]
    total = plan.scenarios["configured"].total
    assert total.rejected_requests == 0 and total.shortfall_minutes_in_peaks == 0
    assert total.shortfall_minutes <= 20
    assert "### Verdict: not met" in render_summary(plan)


def test_every_plan_states_its_margin(plan) -> None:
    assert plan.margin.startswith("rejected requests, shortfall in peak windows, shortfall in all hold down to ")
    assert "/min per ml.g5.xlarge" in plan.margin and "provisioning (assumed 8)" in plan.margin
    assert plan.margin.endswith("not met at the assumptions: cost")
    assert f"- Margin: {plan.margin}." in render_summary(plan)


def test_g5_unavailable_on_release_night_meets_the_same_service_budget() -> None:
    """The pre-scale (17:30 JST) lands before friday-chapters (18:00-22:00): what target tracking adds
    in the window comes from the ml.g6.xlarge pool, and the figures stay those of the normal week."""
    result = unavailable(load_environment("prod"), "ml.g5.xlarge@friday-chapters")
    total = result.scenarios["configured"].total
    assert total.rejected_requests == 0 and total.shortfall_minutes_in_peaks == 0
    assert total.shortfall_minutes <= 20
    pools = [e.text for e in result.scenarios["configured"].events if e.kind == "pool"]
    assert pools and all(text.endswith("x ml.g6.xlarge (fallback pool)") for text in pools)
    assert "Scenario (--unavailable): no new ml.g5.xlarge Fri 2026-10-30 09:00–13:00 UTC" in render_summary(result)


def test_the_fallback_pool_prevents_the_release_night_shortfall() -> None:
    """No ml.g5.xlarge from 17:00 JST Friday, the pre-scale included: with the fallback the night is as
    planned; without it the floor never arrives and the release queues for hours."""
    window = "ml.g5.xlarge@2026-10-30T08:00Z/2026-10-30T13:00Z"
    cfg = load_environment("prod")
    pooled = unavailable(cfg, window).scenarios["configured"].total
    single = unavailable(without_fallback(cfg), window).scenarios["configured"].total
    assert pooled.rejected_requests == 0 and pooled.shortfall_minutes_in_peaks == 0
    assert single.shortfall_minutes_in_peaks > 60 and single.rejected_requests > 100_000


def test_static_fleets_at_max_capacity_and_at_the_peak_side_by_side(plan) -> None:
    assert list(plan.scenarios) == ["configured", "reactive", "static-max", "static", "oracle"]
    at_max = plan.scenarios["static-max"]
    assert set(at_max.variants["primary"].in_service) == {96} and set(at_max.variants["canary"].in_service) == {17}
    assert at_max.total.shortfall_minutes == 0
    assert "| Static fleet at max_capacity |" in render_summary(plan)


def test_cost_is_the_price_of_no_rejections(plan) -> None:
    """Above the 1.25x goal (see test_prod_serves_everyone_and_states_what_it_costs), below the static fleet."""
    assert 1.25 * cost(plan, "oracle") < cost(plan, "configured") <= 1.75 * cost(plan, "oracle")


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
