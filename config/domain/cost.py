"""On-demand cost of an environment's fleet, at the catalog's prices where it deploys (config.domain.prices)."""

from __future__ import annotations

from config.domain.prices import variant_prices
from config.schema import Catalog, EnvironmentConfig

HOURS_PER_MONTH = 730


def monthly_cost_usd(cfg: EnvironmentConfig, catalog: Catalog, instances: dict[str, int]) -> float:
    """Cost of running `instances[variant]` instances of each variant for a month, on demand."""
    prices = variant_prices(cfg, catalog)
    return sum(prices[name] * count for name, count in instances.items()) * HOURS_PER_MONTH


def floor_and_ceiling_usd(cfg: EnvironmentConfig, catalog: Catalog) -> tuple[float, float]:
    """Monthly cost at the autoscaling floor and ceiling (initial counts for variants not scaled)."""
    floor = {v.name: v.initial_instance_count for v in cfg.variants}
    ceiling = dict(floor)
    for name, scaling in cfg.autoscaling.items():
        floor[name], ceiling[name] = scaling.min_capacity, scaling.max_capacity
    return monthly_cost_usd(cfg, catalog, floor), monthly_cost_usd(cfg, catalog, ceiling)
