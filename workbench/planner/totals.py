"""Totals of a scenario: instance-hours and cost scaled to a month, shortfall, queue wait."""

from __future__ import annotations

import math

import numpy as np

from config.domain.cost import HOURS_PER_MONTH
from workbench.planner.results import Scenario, Totals, VariantSeries

HOUR_MINUTES = 60
DAY_MINUTES = 24 * 60


def add_totals(
    scenario: Scenario, usd_per_hour: dict[str, float], peaks: list[bool] | None = None, allowed_wait: float = math.inf
) -> Scenario:
    """Fill `per_variant` and `total`; `usd_per_hour` is each variant's instance price (for series without
    `billed_usd_per_hour`, i.e. of one instance type), `peaks` flags the minutes inside the traffic's peak windows,
    `allowed_wait` is the queue wait in seconds past which a request fails (planner.build.allowed_wait)."""
    run_hours = scenario.minutes / 60
    peak = np.asarray(peaks or [False] * scenario.minutes, dtype=bool)
    activities = {name: 0 for name in scenario.variants}
    for event in scenario.events:
        if event.kind == "scale":
            activities[event.variant] += 1
    columns = {name: _Columns(series, allowed_wait) for name, series in scenario.variants.items()}
    for name in scenario.variants:
        scenario.per_variant[name] = _totals(
            [columns[name]], {name: usd_per_hour[name]}, run_hours, activities[name], peak, allowed_wait
        )
    everything = list(columns.values())
    scenario.failed = _failed(everything).tolist()
    scenario.total = _totals(everything, usd_per_hour, run_hours, sum(activities.values()), peak, allowed_wait)
    return scenario


class _Columns:
    """A variant's series as arrays, converted once for every total that reads them."""

    def __init__(self, series: VariantSeries, allowed_wait: float) -> None:
        self.series = series
        minutes = len(series.demand)
        self.demand = np.asarray(series.demand, dtype=float)
        self.backlog = _column(series.backlog, minutes)
        self.rejected = _column(series.rejected, minutes)
        self.wait = np.asarray(series.wait_seconds, dtype=float)
        # Shed per minute (zeros for a series that records none); admitted: arrivals that joined the queue.
        self.shed = _column(series.shed, minutes)
        self.admitted = self.demand - self.shed
        # Failed per minute: shed and rejected requests plus the served ones that queued past the allowed wait.
        late = self.wait > allowed_wait
        self.failed = self.shed + self.rejected + np.where(late, self.admitted - self.rejected, 0.0)


def _column(values: list[float], minutes: int) -> np.ndarray:
    """A count per minute as an array; one that is all zeros (a run without queues: most) made, not converted."""
    return np.asarray(values, dtype=float) if any(values) else np.zeros(minutes)


def _totals(
    variants: list[_Columns],
    usd_per_hour: dict[str, float],
    run_hours: float,
    activities: int,
    peak: np.ndarray,
    allowed_wait: float,
) -> Totals:
    series = [c.series for c in variants]
    instance_hours = sum(sum(v.billed) for v in series) / 60
    cost = sum(
        sum(v.billed_usd_per_hour) / 60 if v.billed_usd_per_hour else sum(v.billed) / 60 * usd_per_hour[v.name]
        for v in series
    )
    short = np.zeros(len(variants[0].demand), dtype=bool)
    for c in variants:  # a minute with a queue, a shed request or a rejection in any variant
        short |= (c.backlog > 0) | (c.rejected > 0) | (c.shed > 0)
    waits = np.concatenate([c.wait for c in variants])
    served = np.concatenate([c.admitted - c.rejected for c in variants])
    queued = waits > 0
    failed = _failed(variants)
    arrived = np.sum([c.demand for c in variants], axis=0)
    return Totals(
        instance_hours=instance_hours,
        monthly_cost_usd=cost * HOURS_PER_MONTH / run_hours,
        shortfall_minutes=int(short.sum()),
        shortfall_minutes_in_peaks=int((short & peak).sum()),
        delayed_requests=float(served[queued].sum()),
        rejected_requests=sum(sum(v.rejected) for v in series),
        shed_requests=float(sum(c.shed.sum() for c in variants)),
        wait_p95_seconds=weighted_percentile(waits, served, 0.95),
        wait_max_seconds=float(waits.max(initial=0.0)),
        scaling_activities=activities,
        delayed_wait_p95_seconds=weighted_percentile(waits[queued], served[queued], 0.95),
        failed_requests=float(failed.sum()),
        failed_in_peaks=float(failed[peak].sum()),
        failed_worst_hour=float(worst_window(failed, HOUR_MINUTES).max(initial=0.0)),
        failed_worst_hour_percent=worst_share(failed, arrived, HOUR_MINUTES) * 100,
        failed_worst_day_percent=worst_share(failed, arrived, DAY_MINUTES) * 100,
        delayed_within_objective=float(served[queued & (waits <= allowed_wait)].sum()),
        wait_p99_seconds=weighted_percentile(waits, served, 0.99),
    )


def _failed(variants: list[_Columns]) -> np.ndarray:
    """Per minute, over all variants, the failed requests (_Columns.failed), added in the variants' order."""
    failed = np.zeros(len(variants[0].demand))
    for c in variants:
        failed += c.failed
    return failed


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
    if total <= 0 or not values.any():  # no wait at all (most runs): every percentile is 0
        return 0.0
    order = np.lexsort((weights, values))  # by value, then weight
    reached = np.cumsum(weights[order]) >= fraction * total
    return float(values[order][reached.argmax()]) if reached.any() else float(values.max())
