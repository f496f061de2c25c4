"""Two reference fleets that need no policy model: static for the week's peak, and the oracle.

The oracle knows every minute's demand ahead and has instances the moment it needs them, keeping
the configured minimum floor: the cheapest fleet with no shortfall, a lower bound for any policy.
Its instances are of the first pool type that can be provisioned at that minute (planner.outages);
the static fleet is in service all along, of the preferred type.
"""

from __future__ import annotations

import math
from datetime import datetime

from planner.fleet import Availability, Pool, VariantModel, always
from planner.results import Scenario, VariantSeries


def needed(model: VariantModel, arrivals: float, pool: Pool | None = None) -> int:
    capacity = (pool or model.pools[0]).capacity
    return max(model.min_capacity, math.ceil(arrivals / capacity.requests_per_minute))


def oracle(
    models: list[VariantModel], demand: list[float], start: datetime, available: Availability = always
) -> Scenario:
    pools = {m.name: [_first_available(m, minute, available) for minute in range(len(demand))] for m in models}
    counts = {
        m.name: [needed(m, total * m.share, pool) for total, pool in zip(demand, pools[m.name], strict=True)]
        for m in models
    }
    return _fixed("oracle", "Oracle: exact demand, instant instances", models, demand, start, counts, pools)


def static_for_peak(models: list[VariantModel], demand: list[float], start: datetime) -> Scenario:
    counts = {m.name: [max(needed(m, total * m.share) for total in demand)] * len(demand) for m in models}
    pools = {m.name: [m.pools[0]] * len(demand) for m in models}
    return _fixed("static", "Static fleet sized for the week's peak", models, demand, start, counts, pools)


def _first_available(model: VariantModel, minute: int, available: Availability) -> Pool:
    return next((p for p in model.pools if available(p.instance_type, minute)), model.pools[0])


def _fixed(key: str, title: str, models, demand, start, counts: dict[str, list[int]], pools) -> Scenario:
    variants = {}
    for m in models:
        series = VariantSeries(m.name)
        for total, n, pool in zip(demand, counts[m.name], pools[m.name], strict=True):
            series.demand.append(total * m.share)
            series.in_service.append(n)
            series.billed.append(n)
            series.billed_usd_per_hour.append(n * pool.usd_per_hour)
            series.capacity.append(n * pool.capacity.requests_per_minute)
            series.backlog.append(0.0)
            series.rejected.append(0.0)
            series.wait_seconds.append(0.0)
        variants[m.name] = series
    return Scenario(key=key, title=title, start=start, variants=variants)
