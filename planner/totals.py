"""Totals of a scenario: instance-hours and cost scaled to a month, shortfall, queue wait."""

from __future__ import annotations

from config.cost import HOURS_PER_MONTH
from planner.results import Scenario, Totals, VariantSeries


def add_totals(scenario: Scenario, usd_per_hour: dict[str, float], peaks: list[bool] | None = None) -> Scenario:
    """Fill `per_variant` and `total`; `usd_per_hour` is each variant's instance price (for series without
    `billed_usd_per_hour`, i.e. of one instance type), `peaks` flags the minutes inside the traffic's peak windows."""
    run_hours = scenario.minutes / 60
    peaks = peaks or [False] * scenario.minutes
    activities = {name: 0 for name in scenario.variants}
    for event in scenario.events:
        if event.kind == "scale":
            activities[event.variant] += 1
    for name, series in scenario.variants.items():
        scenario.per_variant[name] = _totals([series], {name: usd_per_hour[name]}, run_hours, activities[name], peaks)
    variants = list(scenario.variants.values())
    scenario.total = _totals(variants, usd_per_hour, run_hours, sum(activities.values()), peaks)
    return scenario


def _totals(
    variants: list[VariantSeries], usd_per_hour: dict[str, float], run_hours: float, activities: int, peak: list[bool]
) -> Totals:
    instance_hours = sum(sum(v.billed) for v in variants) / 60
    cost = sum(
        sum(v.billed_usd_per_hour) / 60 if v.billed_usd_per_hour else sum(v.billed) / 60 * usd_per_hour[v.name]
        for v in variants
    )
    minutes = len(variants[0].demand)
    short = [any(_short(v, m) for v in variants) for m in range(minutes)]
    waits = [(v.wait_seconds[m], v.demand[m] - v.rejected[m]) for v in variants for m in range(minutes)]
    return Totals(
        instance_hours=instance_hours,
        monthly_cost_usd=cost * HOURS_PER_MONTH / run_hours,
        shortfall_minutes=sum(short),
        shortfall_minutes_in_peaks=sum(s and p for s, p in zip(short, peak, strict=True)),
        delayed_requests=sum(weight for wait, weight in waits if wait > 0),
        rejected_requests=sum(sum(v.rejected) for v in variants),
        wait_p95_seconds=weighted_percentile(waits, 0.95),
        wait_max_seconds=max((wait for wait, _ in waits), default=0.0),
        scaling_activities=activities,
        delayed_wait_p95_seconds=weighted_percentile([(w, n) for w, n in waits if w > 0], 0.95),
    )


def _short(series: VariantSeries, minute: int) -> bool:
    return series.backlog[minute] > 0 or series.rejected[minute] > 0


def weighted_percentile(values: list[tuple[float, float]], fraction: float) -> float:
    """The value below which `fraction` of the total weight lies; (value, weight) pairs."""
    total = sum(weight for _, weight in values)
    if total <= 0:
        return 0.0
    running = 0.0
    for value, weight in sorted(values):
        running += weight
        if running >= fraction * total:
            return value
    return max(value for value, _ in values)
