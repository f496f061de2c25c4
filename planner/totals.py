"""Totals of a scenario: instance-hours and cost scaled to a month, shortfall, queue wait."""

from __future__ import annotations

import math

import numpy as np

from config.cost import HOURS_PER_MONTH
from planner.results import Scenario, Totals, VariantSeries

HOUR_MINUTES = 60
DAY_MINUTES = 24 * 60


def add_totals(
    scenario: Scenario, usd_per_hour: dict[str, float], peaks: list[bool] | None = None, allowed_wait: float = math.inf
) -> Scenario:
    """Fill `per_variant` and `total`; `usd_per_hour` is each variant's instance price (for series without
    `billed_usd_per_hour`, i.e. of one instance type), `peaks` flags the minutes inside the traffic's peak windows,
    `allowed_wait` is the queue wait in seconds past which a request fails (planner.build.allowed_wait)."""
    run_hours = scenario.minutes / 60
    peaks = peaks or [False] * scenario.minutes
    activities = {name: 0 for name in scenario.variants}
    for event in scenario.events:
        if event.kind == "scale":
            activities[event.variant] += 1
    for name, series in scenario.variants.items():
        scenario.per_variant[name] = _totals(
            [series], {name: usd_per_hour[name]}, run_hours, activities[name], peaks, allowed_wait
        )
    variants = list(scenario.variants.values())
    scenario.failed = _failed(variants, allowed_wait).tolist()
    scenario.total = _totals(variants, usd_per_hour, run_hours, sum(activities.values()), peaks, allowed_wait)
    return scenario


def _totals(
    variants: list[VariantSeries],
    usd_per_hour: dict[str, float],
    run_hours: float,
    activities: int,
    peak: list[bool],
    allowed_wait: float,
) -> Totals:
    instance_hours = sum(sum(v.billed) for v in variants) / 60
    cost = sum(
        sum(v.billed_usd_per_hour) / 60 if v.billed_usd_per_hour else sum(v.billed) / 60 * usd_per_hour[v.name]
        for v in variants
    )
    short = np.zeros(len(variants[0].demand), dtype=bool)
    for v in variants:  # a minute with a queue, a shed request or a rejection in any variant
        short |= (np.asarray(v.backlog) > 0) | (np.asarray(v.rejected) > 0) | (_shed(v) > 0)
    waits = np.concatenate([np.asarray(v.wait_seconds, dtype=float) for v in variants])
    served = np.concatenate([_admitted(v) - np.asarray(v.rejected, dtype=float) for v in variants])
    queued = waits > 0
    failed = _failed(variants, allowed_wait)
    arrived = np.sum([np.asarray(v.demand, dtype=float) for v in variants], axis=0)
    return Totals(
        instance_hours=instance_hours,
        monthly_cost_usd=cost * HOURS_PER_MONTH / run_hours,
        shortfall_minutes=int(short.sum()),
        shortfall_minutes_in_peaks=int((short & np.asarray(peak, dtype=bool)).sum()),
        delayed_requests=float(served[queued].sum()),
        rejected_requests=sum(sum(v.rejected) for v in variants),
        shed_requests=float(sum(_shed(v).sum() for v in variants)),
        wait_p95_seconds=weighted_percentile(waits, served, 0.95),
        wait_max_seconds=float(waits.max(initial=0.0)),
        scaling_activities=activities,
        delayed_wait_p95_seconds=weighted_percentile(waits[queued], served[queued], 0.95),
        failed_requests=float(failed.sum()),
        failed_in_peaks=float(failed[np.asarray(peak, dtype=bool)].sum()),
        failed_worst_hour=float(worst_window(failed, HOUR_MINUTES).max(initial=0.0)),
        failed_worst_hour_percent=worst_share(failed, arrived, HOUR_MINUTES) * 100,
        failed_worst_day_percent=worst_share(failed, arrived, DAY_MINUTES) * 100,
        delayed_within_objective=float(served[queued & (waits <= allowed_wait)].sum()),
        wait_p99_seconds=weighted_percentile(waits, served, 0.99),
    )


def _failed(variants: list[VariantSeries], allowed_wait: float) -> np.ndarray:
    """Per minute, over all variants: shed and rejected requests plus the served ones that queued past the
    allowed wait."""
    failed = np.zeros(len(variants[0].demand))
    for v in variants:
        rejected = np.asarray(v.rejected, dtype=float)
        late = np.asarray(v.wait_seconds, dtype=float) > allowed_wait
        failed += _shed(v) + rejected + np.where(late, _admitted(v) - rejected, 0.0)
    return failed


def _shed(v: VariantSeries) -> np.ndarray:
    """Shed per minute (zeros for a series that records none)."""
    return np.asarray(v.shed, dtype=float) if v.shed else np.zeros(len(v.demand))


def _admitted(v: VariantSeries) -> np.ndarray:
    """Arrivals per minute that joined the queue: all but the shed."""
    return np.asarray(v.demand, dtype=float) - _shed(v)


def worst_window(values: np.ndarray, window: int) -> np.ndarray:
    """Sums over every run of `window` minutes (the whole run, once, when it is shorter)."""
    sums = np.concatenate([[0.0], np.cumsum(values)])
    window = min(window, len(values))
    return sums[window:] - sums[:-window] if window else np.zeros(0)


def worst_share(part: np.ndarray, whole: np.ndarray, window: int) -> float:
    """The largest part/whole over rolling windows of `window` minutes (the whole run when shorter)."""
    parts, wholes = worst_window(part, window), worst_window(whole, window)
    shares = np.divide(parts, wholes, out=np.zeros_like(parts), where=wholes > 0)
    return float(shares.max(initial=0.0))


def weighted_percentile(values: np.ndarray, weights: np.ndarray, fraction: float) -> float:
    """The value below which `fraction` of the total weight lies."""
    total = weights.sum()
    if total <= 0:
        return 0.0
    order = np.lexsort((weights, values))  # by value, then weight
    reached = np.cumsum(weights[order]) >= fraction * total
    return float(values[order][reached.argmax()]) if reached.any() else float(values.max())
