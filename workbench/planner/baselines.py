"""Reference fleets that need no policy model: static for the week's peak, the oracle, the causal baseline.

The oracle knows every minute's demand ahead and has instances the moment it needs them, keeping only
a redundancy floor (not the config's min_capacity: a raised floor would lower the ratio while raising
the bill): the cheapest fleet with no shortfall, a lower bound for any policy. The causal baseline knows
only the present: it holds, every minute, enough for the present demand times the worst growth the
traffic shows over detection + provisioning, the cheapest fleet a policy that cannot see ahead can hold
without shortfall. Their instances are of the first pool type that can be provisioned at that minute
(planner.outages); the static fleet is in service all along, of the preferred type.
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np

from workbench.planner.fleet import Availability, Pool, VariantModel, always
from workbench.planner.results import Scenario, VariantSeries


def needed(model: VariantModel, arrivals: float, pool: Pool | None = None) -> int:
    capacity = (pool or model.pools[0]).capacity
    return max(model.min_capacity, math.ceil(arrivals / capacity.requests_per_minute))


# Two instances per variant, so one failing or being replaced leaves the variant serving (SageMaker
# Developer Guide, "Best practices for deploying models on SageMaker AI Hosting Services": more than one
# instance per production variant, spread over Availability Zones); a variant configured with fewer keeps that.
REDUNDANCY_FLOOR = 2


def oracle(
    models: list[VariantModel], demand: list[float], start: datetime, available: Availability = always
) -> Scenario:
    minutes = len(demand)
    pools = {m.name: _first_available(m, minutes, available) for m in models}
    floors = {m.name: min(m.min_capacity, REDUNDANCY_FLOOR) for m in models}
    counts = {m.name: _needed_each_minute(m, demand, pools[m.name], floors[m.name]) for m in models}
    return _fixed("oracle", "Oracle: exact demand, instant instances", models, demand, start, counts, pools)


def worst_growth(demand: list[float], lead_minutes: int) -> float:
    """The largest ratio of the busiest minute in the next `lead_minutes` to the present minute's demand."""
    values = np.asarray(demand, dtype=float)
    ahead = values.copy()
    for shift in range(1, lead_minutes + 1):
        ahead[:-shift] = np.maximum(ahead[:-shift], values[shift:])
    ratios = np.divide(ahead, values, out=np.ones_like(values), where=values > 0)
    return float(ratios.max(initial=1.0))


def causal(
    models: list[VariantModel],
    demand: list[float],
    start: datetime,
    lead_minutes: int,
    available: Availability = always,
) -> Scenario:
    """Every minute: the present demand x the worst growth over `lead_minutes` (detection + provisioning)."""
    growth = worst_growth(demand, lead_minutes)
    minutes = len(demand)
    pools = {m.name: _first_available(m, minutes, available) for m in models}
    floors = {m.name: min(m.min_capacity, REDUNDANCY_FLOOR) for m in models}
    headroom = [total * growth for total in demand]
    counts = {m.name: _needed_each_minute(m, headroom, pools[m.name], floors[m.name]) for m in models}
    title = f"Causal baseline: demand x {growth:.2f} (worst growth over {lead_minutes} min)"
    return _fixed("causal", title, models, demand, start, counts, pools)


def static_for_peak(models: list[VariantModel], demand: list[float], start: datetime) -> Scenario:
    counts = {m.name: np.full(len(demand), max(needed(m, total * m.share) for total in demand)) for m in models}
    pools = {m.name: [m.pools[0]] * len(demand) for m in models}
    return _fixed("static", "Static fleet sized for the week's peak", models, demand, start, counts, pools)


def _first_available(model: VariantModel, minutes: int, available: Availability) -> list[Pool]:
    if available is always:
        return [model.pools[0]] * minutes
    pools = model.pools
    return [next((p for p in pools if available(p.instance_type, m)), pools[0]) for m in range(minutes)]


def _needed_each_minute(model: VariantModel, demand: list[float], pools: list[Pool], floor: int) -> np.ndarray:
    """`needed` for every minute at once (the same division and ceiling, elementwise), at least `floor`."""
    arrivals = np.asarray(demand, dtype=float) * model.share
    rates = np.array([pool.capacity.requests_per_minute for pool in pools], dtype=float)
    return np.maximum(floor, np.ceil(arrivals / rates)).astype(int)


def _fixed(key: str, title: str, models, demand, start, counts: dict[str, np.ndarray], pools) -> Scenario:
    variants = {}
    zeros = [0.0] * len(demand)
    for m in models:
        n = counts[m.name]
        prices = np.array([pool.usd_per_hour for pool in pools[m.name]], dtype=float)
        rates = np.array([pool.capacity.requests_per_minute for pool in pools[m.name]], dtype=float)
        variants[m.name] = VariantSeries(
            m.name,
            demand=[total * m.share for total in demand],
            in_service=n.tolist(),
            billed=n.tolist(),
            billed_usd_per_hour=(n * prices).tolist(),
            capacity=(n * rates).tolist(),
            backlog=list(zeros),
            shed=list(zeros),
            rejected=list(zeros),
            wait_seconds=list(zeros),
        )
    return Scenario(key=key, title=title, start=start, variants=variants)
