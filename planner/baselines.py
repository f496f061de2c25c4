"""Two reference fleets that need no policy model: static for the week's peak, and the oracle.

The oracle knows every minute's demand ahead and has instances the moment it needs them, keeping
the configured minimum floor: the cheapest fleet with no shortfall, a lower bound for any policy.
"""

from __future__ import annotations

import math
from datetime import datetime

from planner.fleet import VariantModel
from planner.results import Scenario, VariantSeries


def needed(model: VariantModel, arrivals: float) -> int:
    return max(model.min_capacity, math.ceil(arrivals / model.capacity.requests_per_minute))


def oracle(models: list[VariantModel], demand: list[float], start: datetime) -> Scenario:
    counts = {m.name: [needed(m, total * m.share) for total in demand] for m in models}
    return _fixed("oracle", "Oracle: exact demand, instant instances", models, demand, start, counts)


def static_for_peak(models: list[VariantModel], demand: list[float], start: datetime) -> Scenario:
    counts = {m.name: [max(needed(m, total * m.share) for total in demand)] * len(demand) for m in models}
    return _fixed("static", "Static fleet sized for the week's peak", models, demand, start, counts)


def _fixed(key: str, title: str, models, demand, start, counts: dict[str, list[int]]) -> Scenario:
    variants = {}
    for m in models:
        series = VariantSeries(m.name)
        for total, n in zip(demand, counts[m.name], strict=True):
            series.demand.append(total * m.share)
            series.in_service.append(n)
            series.billed.append(n)
            series.capacity.append(n * m.capacity.requests_per_minute)
            series.backlog.append(0.0)
            series.rejected.append(0.0)
            series.wait_seconds.append(0.0)
        variants[m.name] = series
    return Scenario(key=key, title=title, start=start, variants=variants)
