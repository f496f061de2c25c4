"""The Markdown reports (summary and base/head comparison) on small hand-built plans.

The plan is 3 hours from Thu 28 May 2026 00:00 Asia/Tokyo with two variants:
- chat: 800 requests/min, 1500 during a scheduled peak at minutes 60-119; the second instance comes in
  service 5 minutes late, so minutes 60-64 are short (backlog) and all inside the peak.
- rerank: 300 requests/min with a burst of 700 at minutes 100-101 that one instance (600/min) cannot absorb:
  30 then 50 rejected, backlog until minute 102, outside any peak.
So the configured scenario has 8 shortfall minutes, 5 of them in peaks, 80 rejected, worst at minute 101.
Costs are chosen for readable ratios, not derived from an instance price; the planner's frontier (the
cheapest configuration its search found meeting the budget) costs $1,000, as the oracle does.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from config.schema import PlanBudget
from workbench.planner.compare import render_comparison
from workbench.planner.results import Event, Plan, Scenario, Totals, VariantSeries
from workbench.planner.summary import render_summary
from workbench.planner.totals import add_totals

START = datetime(2026, 5, 27, 15, 0, tzinfo=UTC)  # Thu 28 May 00:00 in Tokyo
MINUTES = 180


def chat_series(minutes: int = MINUTES) -> VariantSeries:
    peak = [60 <= m < 120 for m in range(minutes)]
    in_service = [2 if 65 <= m < 120 else 1 for m in range(minutes)]
    backlog = [300.0 * (m - 59) if 60 <= m < 65 else 0.0 for m in range(minutes)]
    return VariantSeries(
        name="chat",
        demand=[1500.0 if p else 800.0 for p in peak],
        in_service=in_service,
        billed=[2 if 60 <= m < 120 else 1 for m in range(minutes)],
        capacity=[1200.0 * n for n in in_service],
        backlog=backlog,
        rejected=[0.0] * minutes,
        wait_seconds=[b / 20 for b in backlog],
        in_scheduled_peak=peak,
    )


def rerank_series(minutes: int = MINUTES) -> VariantSeries:
    demand = [700.0 if m in (100, 101) else 300.0 for m in range(minutes)]
    rejected = [0.0] * minutes
    rejected[100], rejected[101] = 30.0, 50.0
    backlog = [0.0] * minutes
    backlog[100], backlog[101], backlog[102] = 70.0, 70.0, 10.0
    return VariantSeries(
        name="rerank",
        demand=demand,
        in_service=[1] * minutes,
        billed=[1] * minutes,
        capacity=[600.0] * minutes,
        backlog=backlog,
        rejected=rejected,
        wait_seconds=[b / 10 for b in backlog],
        in_scheduled_peak=[False] * minutes,
    )


def totals(cost: float, **overrides) -> Totals:
    values = dict(
        instance_hours=7.0,
        monthly_cost_usd=cost,
        shortfall_minutes=0,
        shortfall_minutes_in_peaks=0,
        delayed_requests=0.0,
        rejected_requests=0.0,
        wait_p95_seconds=0.0,
        wait_max_seconds=0.0,
        scaling_activities=0,
    )
    return Totals(**(values | overrides))


CHAT_CONFIGURED = Totals(4.0, 700.0, 5, 5, 12_000.0, 0.0, 14.2, 75.0, 2, 31.5)
RERANK_CONFIGURED = Totals(3.0, 480.0, 3, 0, 345.6, 80.0, 8.0, 7.0, 0)


def configured_total(cost: float = 1180.0) -> Totals:
    return Totals(7.0, cost, 8, 5, 12_345.6, 80.0, 12.34, 75.0, 2, 30.04)


def scenario(key: str, title: str, total: Totals, per_variant: dict[str, Totals] | None = None, minutes=MINUTES):
    return Scenario(
        key=key,
        title=title,
        start=START,
        variants={"chat": chat_series(minutes), "rerank": rerank_series(minutes)},
        events=[Event(60, "chat", "schedule", "tokyo-evening-peak start: min 2")],
        per_variant=per_variant or {},
        total=total,
    )


def make_plan(configured_cost: float = 1180.0, oracle: bool = True, minutes: int = MINUTES) -> Plan:
    scenarios = {
        "configured": scenario(
            "configured",
            "Configured: schedules + reactive policies",
            configured_total(configured_cost),
            {"chat": CHAT_CONFIGURED, "rerank": RERANK_CONFIGURED},
            minutes,
        ),
        "reactive": scenario(
            "reactive",
            "Reactive policies only",
            totals(1234.56, instance_hours=6.5, shortfall_minutes=42, shortfall_minutes_in_peaks=30),
            minutes=minutes,
        ),
        "static": scenario("static", "Static fleet at peak size", totals(2400.4, instance_hours=9.0), minutes=minutes),
    }
    if oracle:
        scenarios["oracle"] = scenario(
            "oracle",
            "Oracle: perfect foresight",
            totals(1000.0, instance_hours=6.0),
            {"chat": totals(600.0), "rerank": totals(400.0)},
            minutes,
        )
    return Plan(
        env="prod",
        traffic_name="golden-week",
        scenarios=scenarios,
        assumptions={"capacity per ml.g5.xlarge": "1200 requests/min", "request timeout": "60 s"},
        traffic_events=[("flash sale", 95, 110)],
        frontier_cost=1000.0,
    )


def lines_of(markdown: str) -> list[str]:
    return markdown.splitlines()


# --- summary ---------------------------------------------------------------------------------------


def test_summary_heading_names_env_and_traffic():
    assert lines_of(render_summary(make_plan()))[0] == "## Capacity plan: prod (golden-week)"


def test_summary_has_one_row_per_scenario_in_plan_order_with_formatted_numbers():
    lines = lines_of(render_summary(make_plan()))
    assert lines[2] == (
        "| Scenario | Instance-hours / 3 h | Monthly cost (USD) | Cost vs oracle | Failed requests"
        " | of which in peak windows | Failed, worst hour | Failed, worst 24 h | Shed | Rejected"
        " | Delayed within the objective | p95 / p99 wait (s) | Shortfall minutes | Scaling activities |"
    )
    assert lines[4:6] == [
        "| Configured: schedules + reactive policies | 7.0 | $1,180 | 1.18x | 0 | 0 | 0 (0 %) | 0 % | 0 | 80 | 0"
        " | 12.3 / 0.0 | 8 | 2 |",
        "| Reactive policies only | 6.5 | $1,235 | 1.23x | 0 | 0 | 0 (0 %) | 0 % | 0 | 0 | 0 | 0.0 / 0.0 | 42 | 0 |",
    ]
    assert lines[7].startswith("| Oracle: perfect foresight (lower bound, redundancy floor only) | 6.0 | $1,000 |")


def test_summary_has_a_table_per_variant_with_every_scenario_that_reports_it():
    lines = lines_of(render_summary(make_plan()))
    chat = lines.index("### Variant chat")
    rerank = lines.index("### Variant rerank")
    assert lines[chat + 4].startswith("| Configured: schedules + reactive policies | 4.0 | $700 | 1.17x |")
    assert lines[chat + 5].startswith("| Oracle: perfect foresight (lower bound, redundancy floor only) | 7.0 |")
    assert lines[rerank + 4].startswith("| Configured: schedules + reactive policies | 3.0 | $480 | 1.20x |")


def test_summary_week_long_run_is_labelled_per_week():
    plan = make_plan(minutes=7 * 24 * 60)
    assert "| Scenario | Instance-hours / week |" in render_summary(plan)


def clean_plan(configured_cost: float = 1000.0) -> Plan:
    """make_plan without shortfall or rejections in the configured scenario."""
    plan = make_plan(configured_cost=configured_cost)
    configured = plan.scenarios["configured"]
    configured.total = replace(
        configured.total, shortfall_minutes=0, shortfall_minutes_in_peaks=0, rejected_requests=0.0
    )
    for series in configured.variants.values():
        series.rejected = [0.0] * len(series.rejected)
    return plan


def test_cost_above_the_frontier_is_not_met():
    markdown = render_summary(clean_plan(configured_cost=1100.0))
    assert (
        "- Cost vs the frontier: $1,100/month, 1.10x the cheapest configuration the search found meeting this"
        " budget ($1,000), against 1.05x the frontier: not met."
    ) in lines_of(markdown)
    assert "### Verdict: not met" in lines_of(markdown)


def test_verdict_met_at_the_frontier_within_the_budget():
    markdown = render_summary(clean_plan(configured_cost=1000.0))
    assert "### Verdict: met" in lines_of(markdown)
    assert "not met" not in markdown.split("### Assumptions")[0]
    assert "- Cost as figures (not judged): 1.00x the oracle (redundancy floor only)." in lines_of(markdown)


@pytest.mark.parametrize(("cost", "met"), [(1054.0, True), (1056.0, False)])
def test_cost_is_judged_as_printed(cost, met):
    line = next(line for line in lines_of(render_summary(clean_plan(configured_cost=cost))) if "frontier:" in line)
    assert line.endswith(": met.") == met


def test_without_a_frontier_the_cost_is_not_judged_and_says_how_to_get_one():
    plan = clean_plan()
    plan.frontier_cost = None
    plan.frontier_stale = "no frontier in planning.frontier"
    assert (
        "- Cost vs the frontier: not judged (no frontier in planning.frontier; run `bin/plan prod --tune"
        " --write-config`): not met."
    ) in lines_of(render_summary(plan))


def test_on_other_traffic_than_the_frontiers_the_cost_is_not_judged_and_says_how_to_find_its_own():
    plan = clean_plan(configured_cost=5000.0)  # far above the frontier: not judged, so no failure
    plan.frontier_found_on = "reference week"
    plan.traffic_file = "exports/my week.csv"
    lines = lines_of(render_summary(plan))
    assert "### Verdict: met (cost not judged: supplied traffic)" in lines
    assert (
        "- Cost vs the frontier: not judged: planning.frontier was found on prod's planning.traffic (reference week)"
        " and this plan replays golden-week; `bin/plan prod --traffic 'exports/my week.csv' --tune` finds this"
        " traffic's frontier without writing config."
    ) in lines


def test_cost_goal_comes_from_the_budget():
    plan = clean_plan(configured_cost=1100.0)
    plan.budget = PlanBudget(cost_vs_frontier=1.1)
    assert "against 1.10x the frontier: met." in render_summary(plan)


def with_failures(plan: Plan, allowed_wait: float = 0.5) -> Plan:
    """Totals recomputed from the series (waits in them are backlog / 10 s), peaks from the chat peak."""
    configured = plan.scenarios["configured"]
    plan.peak_windows = [("chat peak", 60, 90)]  # the rerank burst (minutes 100-101) outside it
    add_totals(configured, {"chat": 1.0, "rerank": 1.0}, plan.peak_mask(configured.minutes), allowed_wait)
    return plan


def test_a_request_queued_past_the_objective_in_a_peak_window_fails_the_verdict():
    plan = with_failures(make_plan())
    lines = lines_of(render_summary(plan))
    line = next(line for line in lines if line.startswith("- Failed requests in peak windows:"))
    assert line.endswith(
        ": not met; worst minute 2026-05-27 16:00 UTC (Thu 2026-05-28 01:00 Asia/Tokyo) with 1,500 failed."
    )
    assert "### Verdict: not met" in lines


def test_queueing_within_the_objective_is_delayed_not_failed():
    plan = with_failures(make_plan(), allowed_wait=3600.0)  # every wait within a (long) objective
    total = plan.scenarios["configured"].total
    assert total.failed_in_peaks == 0 and total.failed_requests == 80  # only the rejected
    assert total.delayed_within_objective > 0
    assert "- Failed requests in peak windows: none against a budget of 0: met." in lines_of(render_summary(plan))


def test_the_unannounced_allowance_is_the_worst_hours_share():
    plan = with_failures(make_plan(), allowed_wait=3600.0)
    line = next(line for line in lines_of(render_summary(plan)) if line.startswith("- Failed requests: "))
    assert "80 in the run (0 shed, 80 rejected); worst hour 80," in line and "against the 1 % allowed" in line
    plan.budget = PlanBudget(unannounced_failed_percent=0.01)
    assert "unannounced" in [c.name for c in __import__("workbench.planner.verdict").planner.verdict.judge(plan).checks if not c.passed]


def test_verdict_reports_shortfall_against_its_budget():
    plan = make_plan()
    lines = lines_of(render_summary(plan))
    assert (
        "- Shortfall in all: 8 minutes against a budget of 0 for the 3 h run (30 a week, pro rata): not met." in lines
    )
    plan.budget = PlanBudget(shortfall_minutes_per_week=500)
    lines = lines_of(render_summary(plan))
    assert "- Shortfall in all: 8 minutes against a budget of 8 for the 3 h run (500 a week, pro rata): met." in lines


def test_week_long_shortfall_budget_is_per_week():
    plan = make_plan(minutes=7 * 24 * 60)
    assert "- Shortfall in all: 8 minutes against a budget of 30 a week: met." in lines_of(render_summary(plan))


def test_warnings_are_listed_under_the_verdict():
    plan = clean_plan()
    plan.warnings = ["autoscaling.chat.target_tracking.target_value 1,300 is at or above what an instance serves"]
    lines = lines_of(render_summary(plan))
    verdict = lines.index("### Verdict: met")
    assert (
        lines.index(
            "- Warning: autoscaling.chat.target_tracking.target_value 1,300 is at or above what an instance serves"
        )
        > verdict
    )


def test_summary_without_oracle_prints_na_instead_of_a_ratio():
    markdown = render_summary(make_plan(oracle=False))
    assert "| Configured: schedules + reactive policies | 7.0 | $1,180 | n/a |" in markdown
    assert "Cost as figures" not in markdown


def test_summary_lists_assumptions_and_is_deterministic():
    markdown = render_summary(make_plan())
    assert markdown.endswith(
        "### Assumptions\n\n- capacity per ml.g5.xlarge: 1200 requests/min\n- request timeout: 60 s\n"
    )
    assert markdown == render_summary(make_plan())


def test_summary_requires_a_configured_scenario():
    plan = make_plan()
    del plan.scenarios["configured"]
    with pytest.raises(ValueError, match="no 'configured' scenario"):
        render_summary(plan)


# --- comparison ------------------------------------------------------------------------------------


def head_plan(**total_overrides) -> Plan:
    plan = make_plan()
    configured = plan.scenarios["configured"]
    configured.total = replace(configured.total, **total_overrides)
    return plan


def test_comparison_shows_signed_absolute_and_percent_change():
    base = make_plan(configured_cost=1000.0)
    head = head_plan(monthly_cost_usd=1100.0, shortfall_minutes=2, wait_p95_seconds=12.34)
    lines = lines_of(render_comparison(base, head))
    assert "| Monthly cost (USD) | $1,000 | $1,100 | +$100 (+10.0 %) |" in lines
    assert "| Shortfall minutes | 8 | 2 | -6 (-75.0 %) |" in lines
    assert "| p95 queue wait (s) | 12.3 | 12.3 | no change |" in lines
    assert "| Instance-hours | 7.0 | 7.0 | no change |" in lines


def test_comparison_change_from_zero_has_no_percentage():
    base = make_plan()
    base.scenarios["configured"].total = replace(configured_total(), rejected_requests=0.0)
    lines = lines_of(render_comparison(base, make_plan()))
    assert "| Rejected requests | 0 | 80 | +80 (from 0) |" in lines


def test_comparison_verdict_is_computed_from_the_totals():
    base = clean_plan(configured_cost=1000.0)
    more = render_comparison(base, clean_plan(configured_cost=1050.0))
    assert lines_of(more)[-1] == (
        "**Verdict:** head costs $50/month more and leaves shortfall unchanged at 0 minutes; both meet their budget."
    )

    base = make_plan(configured_cost=1000.0)
    less = render_comparison(base, head_plan(monthly_cost_usd=900.0, shortfall_minutes=11))
    assert lines_of(less)[-1].startswith("**Verdict:** head costs $100/month less and adds 3 shortfall minutes; ")

    same = render_comparison(base, make_plan(configured_cost=1000.0))
    assert lines_of(same)[-1].startswith(
        "**Verdict:** nothing changed (head costs the same and leaves shortfall unchanged at 8 minutes); "
        "base and head both break their budget: shortfall in all 8 minutes against "
    )  # not "head breaks its budget": head changed nothing


def test_comparison_verdict_says_which_config_breaks_its_budget():
    """Each way round: head breaking what base met, head meeting what base broke."""
    broken, clean = make_plan(configured_cost=1000.0), clean_plan(configured_cost=1000.0)
    assert (
        "; head breaks its budget: shortfall in all 0 minutes → 8 minutes against "
        in lines_of(render_comparison(clean, broken))[-1]
    )
    assert lines_of(render_comparison(broken, clean))[-1].endswith("; head meets its budget, which base breaks.")


def test_comparison_verdict_names_what_breaks_the_budget_against_its_limit():
    base = make_plan(configured_cost=1000.0)
    head = head_plan(monthly_cost_usd=1100.0, shortfall_minutes=2)
    verdict = lines_of(render_comparison(base, head))[-1]
    assert verdict == (
        "**Verdict:** head costs $100/month more and removes 6 shortfall minutes; base and head both break their budget: "
        "shortfall in all 8 minutes → 2 minutes against 0 for the 3 h run (30 a week, pro rata); "
        "cost vs the frontier 1.00x the frontier → 1.10x the frontier against 1.05x the frontier."
    )


def test_comparison_says_whether_each_config_meets_its_budget():
    lines = lines_of(render_comparison(make_plan(), clean_plan(configured_cost=1000.0)))
    assert lines[-3] == ("**Budget:** base not met (shortfall in all, cost vs the frontier); head met.")


def test_comparison_per_variant_tables_and_added_or_removed_variants():
    base = make_plan()
    head = make_plan()
    head_variants = head.scenarios["configured"].per_variant
    del head_variants["rerank"]
    head_variants["vision"] = totals(250.0)
    head_variants["chat"] = replace(CHAT_CONFIGURED, monthly_cost_usd=770.0)

    markdown = render_comparison(base, head)
    chat_section = markdown.split("### Variant chat\n")[1]
    assert "| Monthly cost (USD) | $700 | $770 | +$70 (+10.0 %) |" in chat_section
    assert "### Variant rerank" not in markdown
    assert "- Added in head: vision ($250/month)" in lines_of(markdown)
    assert "- Removed in head: rerank (was $480/month)" in lines_of(markdown)


def test_comparison_without_variant_changes_lists_none_added_or_removed():
    markdown = render_comparison(make_plan(), make_plan())
    assert "### Variant chat" in markdown and "### Variant rerank" in markdown
    assert "added or removed" not in markdown


def test_comparison_rejects_plans_over_different_traffic_lengths():
    with pytest.raises(ValueError, match="different traffic lengths: base has 180 minutes.*head has 120 minutes"):
        render_comparison(make_plan(), make_plan(minutes=120))
