"""Is the configured fleet good enough? Met only when users are served within the budget AND the cost is
within reach of the cheapest configuration the planner's own search found meeting the same budget.

A request fails when it is shed at the admission deadline, rejected, or its queue wait pushes its first
token past the objective (planner.build.allowed_wait); one that waited less is "delayed within the objective". The budget
(`planning.budget`): no failed request in the traffic's peak windows (announced: the fleet is expected
ready), failed requests in the worst 24 h within the allowance for unannounced spikes, shortfall minutes
in all, and cost at most `cost_vs_frontier` x the frontier (`planning.frontier`, from `bin/plan ENV
--tune`; on traffic other than planning.traffic, e.g. `--traffic week.csv`, the cost is not judged and
does not fail the verdict: the frontier was found on planning.traffic, planner.frontier). The
clairvoyant oracle and the causal baseline are reported as figures, never judged: no policy that knows
only the past can match the oracle on a spike (Lin et al., INFOCOM 2011).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from workbench.planner.formatting import (
    format_count,
    format_decimal,
    format_percent,
    format_ratio,
    format_requests,
    format_run_length,
    format_time,
    format_usd,
)
from workbench.planner.results import FigureCheck, Plan, Scenario, Totals

DAY_MINUTES = 24 * 60
WEEK_MINUTES = 7 * DAY_MINUTES


CHECK_NAMES = {
    "peaks": "failed requests in peak windows",
    "unannounced": "failed requests in the worst hour",
    "shortfall": "shortfall in all",
    "cost": "cost vs the frontier",
}


@dataclass(frozen=True)
class Check:
    name: str  # a key of CHECK_NAMES
    passed: bool
    text: str  # the verdict line, without the leading "- "
    figure: str = ""  # the judged figure, short: "6,005 (0.18 % in the worst 24 h)"
    limit: str = ""  # what it is judged against: "0.1 %"
    not_judged: str = ""  # why a check that does not fail the verdict was not judged: "supplied traffic"

    def against_limit(self, before: Check | None = None) -> str:
        """'rejected requests 6,005 (0.18 % in the worst 24 h) against 0.1 %': why a check failed, in one
        phrase; with `before` (the same check of a base plan) its figure first: '2,710 (…) → 6,005 (…)'."""
        figure = f"{before.figure} → {self.figure}" if before and before.figure != self.figure else self.figure
        return f"{CHECK_NAMES[self.name]} {figure} against {self.limit}"


@dataclass(frozen=True)
class Verdict:
    checks: list[Check]
    figures: tuple[FigureCheck, ...] = ()  # the config's figures the plan checked (the budget's): a stale one fails

    @property
    def met(self) -> bool:
        return all(check.passed for check in self.checks) and not any(figure.stale for figure in self.figures)

    @property
    def headline(self) -> str:
        """'met', 'not met', or 'met (cost not judged: supplied traffic)'."""
        if not self.met:
            return "not met"
        unjudged = [f"{check.name} not judged: {check.not_judged}" for check in self.checks if check.not_judged]
        return f"met ({'; '.join(unjudged)})" if unjudged else "met"


def shortfall_allowance(per_week: int, minutes: int) -> int:
    """The weekly shortfall budget, pro rata for a run of `minutes` (rounded down)."""
    return per_week if minutes == WEEK_MINUTES else math.floor(per_week * minutes / WEEK_MINUTES)


def cost_ratio(totals: Totals, oracle: Totals | None) -> float | None:
    if oracle is None or oracle.monthly_cost_usd <= 0:
        return None
    return totals.monthly_cost_usd / oracle.monthly_cost_usd


def judge(plan: Plan) -> Verdict:
    configured = plan.scenarios["configured"]
    return Verdict(
        [_peaks(plan, configured), _unannounced(plan, configured), _shortfall(plan, configured), _cost(plan)],
        tuple(plan.figures),
    )


FAILED_CHECKS = {"peaks", "unannounced"}


def headroom(plan: Plan) -> str:
    """The failed-request checks again with every capacity planning.budget.capacity_error_percent lower, in
    one line (a figure: the budget does not judge it)."""
    if plan.at_capacity_error is None:
        return ""
    missed = [CHECK_NAMES[name] for name in sorted(FAILED_CHECKS - plan.at_capacity_error)]
    outcome = "both failed-request checks hold" if not missed else f"not met: {', '.join(missed)}"
    return f"with every capacity {plan.budget.capacity_error_percent:g} % lower (not judged): {outcome}"


def _met(passed: bool) -> str:
    return "met" if passed else "not met"


def _peaks(plan: Plan, configured: Scenario) -> Check:
    total, allowed = configured.total, plan.budget.failed_in_peaks
    passed = total.failed_in_peaks <= allowed
    figure = format_requests(total.failed_in_peaks) if total.failed_in_peaks else "none"
    text = f"Failed requests in peak windows: {figure} against a budget of {format_count(allowed)}: {_met(passed)}"
    worst = worst_failure_minute(configured, plan.peak_mask(configured.minutes))
    if worst is not None:
        minute, count = worst
        text += f"; worst minute {format_time(configured.time_at(minute))} with {format_requests(count)} failed"
    return Check("peaks", passed, text + ".", figure, format_count(allowed))


def _unannounced(plan: Plan, configured: Scenario) -> Check:
    total, budget = configured.total, plan.budget
    share = total.failed_worst_hour_percent
    passed = round(share, 3) <= budget.unannounced_failed_percent
    where = "the worst hour" if configured.minutes >= 60 else f"the {format_run_length(configured.minutes)} run"
    text = (
        f"Failed requests: {format_requests(total.failed_requests)} in the run ({format_requests(total.shed_requests)}"
        f" shed, {format_requests(total.rejected_requests)} rejected); worst hour {format_requests(total.failed_worst_hour)}, {format_percent(share)} % of {where}, against"
        f" the {budget.unannounced_failed_percent:g} % allowed for unannounced spikes: {_met(passed)}; worst 24 h"
        f" {format_percent(total.failed_worst_day_percent)} %; queue wait p95 {format_decimal(total.wait_p95_seconds)} s,"
        f" p99 {format_decimal(total.wait_p99_seconds)} s; {format_requests(total.delayed_within_objective)} delayed"
        " within the objective"
    )
    figure = f"{format_percent(share)} % of {where}"
    return Check("unannounced", passed, text + ".", figure, f"{budget.unannounced_failed_percent:g} %")


def _shortfall(plan: Plan, configured: Scenario) -> Check:
    total, budget = configured.total, plan.budget
    allowed = shortfall_allowance(budget.shortfall_minutes_per_week, configured.minutes)
    all_ok = total.shortfall_minutes <= allowed
    if configured.minutes == WEEK_MINUTES:
        against = f"a budget of {format_count(allowed)} a week"
    else:
        against = (
            f"a budget of {format_count(allowed)} for the {format_run_length(configured.minutes)} run"
            f" ({format_count(budget.shortfall_minutes_per_week)} a week, pro rata)"
        )
    overall = Check(
        "shortfall",
        all_ok,
        f"Shortfall in all: {format_count(total.shortfall_minutes)} minutes against {against}: {_met(all_ok)}.",
        f"{format_count(total.shortfall_minutes)} minutes",
        against.removeprefix("a budget of "),
    )
    return overall


def _cost(plan: Plan) -> Check:
    goal = f"{plan.budget.cost_vs_frontier:.2f}x the frontier"
    cost = plan.scenarios["configured"].total.monthly_cost_usd
    if plan.frontier_cost is None or plan.frontier_stale:
        why = plan.frontier_stale or "no frontier in planning.frontier"
        return Check(
            "cost", False, f"Cost vs the frontier: not judged ({why}; run `bin/plan {plan.env} --tune --write-config`):"
            " not met.", "unknown", goal,
        )  # fmt: skip
    if plan.frontier_found_on:
        return Check("cost", True, _other_traffic(plan), "not judged", goal, not_judged="supplied traffic")
    ratio = cost / plan.frontier_cost
    passed = round(ratio, 2) <= plan.budget.cost_vs_frontier  # as printed: "1.05x against 1.05x" is met
    text = (
        f"Cost vs the frontier: {format_usd(cost)}/month, {format_ratio(ratio)} the cheapest configuration the"
        f" search found meeting this budget ({format_usd(plan.frontier_cost)}), against {goal}: {_met(passed)}"
    )
    return Check("cost", passed, text + ".", f"{format_ratio(ratio)} the frontier", goal)


def _other_traffic(plan: Plan) -> str:
    """The frontier applies to planning.traffic, the plan replays other traffic: say so, and how to find
    that traffic's frontier without writing it over the environment's (no --write-config)."""
    tune = (
        f"`bin/plan {plan.env} --traffic {shlex.quote(plan.traffic_file)} --tune`"
        if plan.traffic_file
        else f"`bin/plan {plan.env} --traffic FILE --tune` (FILE: a CSV of this traffic)"
    )
    return (
        f"Cost vs the frontier: not judged: planning.frontier was found on {plan.env}'s planning.traffic"
        f" ({plan.frontier_found_on}) and this plan replays {plan.traffic_name}; {tune} finds this traffic's"
        " frontier without writing config."
    )


def cost_figures(plan: Plan) -> str:
    """Cost against the two reference fleets, as figures (never judged)."""
    configured = plan.scenarios["configured"].total
    parts = [
        f"{format_ratio(cost_ratio(configured, plan.scenarios[key].total))} {name}"
        for key, name in (("oracle", "the oracle (redundancy floor only)"), ("causal", "the causal baseline"))
        if key in plan.scenarios
    ]
    return ", ".join(parts)


def worst_failure_minute(scenario: Scenario, mask: list[bool]) -> tuple[int, float] | None:
    """The minute inside `mask` with the most failed requests (planner.totals), earliest on a tie."""
    inside = [(count, -minute) for minute, count in enumerate(scenario.failed) if mask[minute] and count > 0]
    if not inside:
        return None
    count, minute = max(inside)
    return -minute, count
