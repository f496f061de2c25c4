"""Is the configured fleet good enough? Met only when users are served within the budget AND at the cost goal.

The budget (`planning.budget`) caps rejected requests (worst 24 h, as the seeds' error-rate SLO is
measured), shortfall minutes inside the traffic's peak windows and shortfall minutes in all. The
cost must lie between the oracle, the cheapest fleet with no shortfall, and the goal: a fleet
cheaper than the oracle only gets there by turning users away, so it is a warning, never a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.formatting import (
    format_count,
    format_percent,
    format_ratio,
    format_requests,
    format_run_length,
    format_time,
)
from planner.results import Plan, Scenario, Totals

DAY_MINUTES = 24 * 60
WEEK_MINUTES = 7 * DAY_MINUTES


CHECK_NAMES = {
    "rejected": "rejected requests",
    "peaks": "shortfall in peak windows",
    "shortfall": "shortfall in all",
    "cost": "cost",
}


@dataclass(frozen=True)
class Check:
    name: str  # a key of CHECK_NAMES
    passed: bool
    text: str  # the verdict line, without the leading "- "
    figure: str = ""  # the judged figure, short: "6,005 (0.18 % in the worst 24 h)"
    limit: str = ""  # what it is judged against: "0.1 %"

    def against_limit(self, before: Check | None = None) -> str:
        """'rejected requests 6,005 (0.18 % in the worst 24 h) against 0.1 %': why a check failed, in one
        phrase; with `before` (the same check of a base plan) its figure first: '2,710 (…) → 6,005 (…)'."""
        figure = f"{before.figure} → {self.figure}" if before and before.figure != self.figure else self.figure
        return f"{CHECK_NAMES[self.name]} {figure} against {self.limit}"


@dataclass(frozen=True)
class Verdict:
    checks: list[Check]

    @property
    def met(self) -> bool:
        return all(check.passed for check in self.checks)


def worst_day_share(demand: list[float], rejected: list[float]) -> float:
    """Rejected / arrived over the worst rolling 24 h (the whole run when shorter than a day)."""
    window = min(DAY_MINUTES, len(demand))
    arrived, lost = sum(demand[:window]), sum(rejected[:window])
    worst = lost / arrived if arrived else 0.0
    for end in range(window, len(demand)):
        arrived += demand[end] - demand[end - window]
        lost += rejected[end] - rejected[end - window]
        if arrived > 0:
            worst = max(worst, lost / arrived)
    return worst


def shortfall_allowance(per_week: int, minutes: int) -> int:
    """The weekly shortfall budget, pro rata for a run of `minutes` (rounded down)."""
    return per_week if minutes == WEEK_MINUTES else math.floor(per_week * minutes / WEEK_MINUTES)


def cost_ratio(totals: Totals, oracle: Totals | None) -> float | None:
    if oracle is None or oracle.monthly_cost_usd <= 0:
        return None
    return totals.monthly_cost_usd / oracle.monthly_cost_usd


def worst_rejection_minute(scenario: Scenario) -> tuple[int, float, list[str]] | None:
    """The minute with the most rejected requests over all variants (earliest on a tie), and who rejected."""
    worst: tuple[int, float] | None = None
    for minute in range(scenario.minutes):
        rejected = sum(series.rejected[minute] for series in scenario.variants.values())
        if rejected > 0 and (worst is None or rejected > worst[1]):
            worst = (minute, rejected)
    if worst is None:
        return None
    minute, rejected = worst
    names = [name for name, series in scenario.variants.items() if series.rejected[minute] > 0]
    return minute, rejected, names


def judge(plan: Plan) -> Verdict:
    configured = plan.scenarios["configured"]
    oracle = plan.scenarios.get("oracle")
    return Verdict([_rejected(plan, configured), *_shortfall(plan, configured), _cost(plan, configured, oracle)])


def _met(passed: bool) -> str:
    return "met" if passed else "not met"


def _rejected(plan: Plan, configured: Scenario) -> Check:
    budget = plan.budget.rejected_percent
    total = configured.total.rejected_requests
    if total <= 0:
        return Check("rejected", True, f"Rejected requests: none (budget {budget:g} %): met.", "none", f"{budget:g} %")
    variants = list(configured.variants.values())
    demand = [sum(v.demand[m] for v in variants) for m in range(configured.minutes)]
    rejected = [sum(v.rejected[m] for v in variants) for m in range(configured.minutes)]
    share = worst_day_share(demand, rejected) * 100
    passed = share <= budget
    where = (
        "in the worst 24 h"
        if configured.minutes >= DAY_MINUTES
        else f"over the {format_run_length(configured.minutes)} run"
    )
    text = f"Rejected requests: {format_requests(total)}, {format_percent(share)} % {where}, against the {budget:g} % budget: {_met(passed)}"
    worst = worst_rejection_minute(configured)
    if worst is not None:
        minute, count, names = worst
        text += (
            f"; worst minute {format_time(configured.time_at(minute))}"
            f" with {format_requests(count)} rejected ({', '.join(names)})"
        )
    return Check(
        "rejected", passed, text + ".", f"{format_requests(total)} ({format_percent(share)} % {where})", f"{budget:g} %"
    )


def _shortfall(plan: Plan, configured: Scenario) -> list[Check]:
    total, budget = configured.total, plan.budget
    in_peaks = total.shortfall_minutes_in_peaks
    peaks_ok = in_peaks <= budget.shortfall_minutes_in_peaks
    peaks = Check(
        "peaks",
        peaks_ok,
        f"Shortfall in peak windows: {format_count(in_peaks)} minutes against a budget of"
        f" {format_count(budget.shortfall_minutes_in_peaks)}: {_met(peaks_ok)}.",
        f"{format_count(in_peaks)} minutes",
        format_count(budget.shortfall_minutes_in_peaks),
    )
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
    return [peaks, overall]


def _cost(plan: Plan, configured: Scenario, oracle: Scenario | None) -> Check:
    goal = format_ratio(plan.budget.cost_vs_oracle)
    ratio = cost_ratio(configured.total, oracle.total if oracle else None)
    if ratio is None:
        return Check(
            "cost",
            False,
            f"Cost vs oracle: not computed (no oracle cost in the plan); goal {goal}: not met.",
            "unknown",
            goal,
        )
    text = f"Cost vs oracle: {format_ratio(ratio)} against the {goal} goal"
    printed = round(ratio, 2)  # judged as printed, so "1.25x against the 1.25x goal" never reads "not met"
    if printed < 1:
        return Check(
            "cost",
            False,
            f"{text}: not met: below the oracle's lower bound (1.00x), which only a fleet short of capacity reaches.",
            f"{format_ratio(ratio)} the oracle",
            "the oracle's 1.00x lower bound",
        )
    passed = printed <= plan.budget.cost_vs_oracle
    return Check("cost", passed, f"{text}: {_met(passed)}.", f"{format_ratio(ratio)} the oracle", f"the {goal} goal")
