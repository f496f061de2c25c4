"""What an environment's instances cost an hour where it deploys: config/catalog.yaml `pricing`.

An environment is priced in its `region`; one without a region (environment-agnostic, deployed to the
CLI's default region) in `pricing.unpinned_region`. A region whose prices stand in for another's
(`assumed_from`) is priced at that region's figures, and every description says ASSUMED with the
catalog's reason. The one lookup for the planner, the budget, the stack's outputs and ops; synth
refuses an environment whose region lacks a price (config.checks.prices) with `MissingPrice.message`.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.naming import environment_label
from config.problems import Problem, field_path, refuse
from config.schema import Catalog, EnvironmentConfig, Price

CATALOG_LABEL = "config/catalog.yaml"  # as messages name the file


class MissingPrice(LookupError):
    """No price for an instance type in the region an environment is priced in; `message` says where to add it."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class RegionalPrices:
    """The prices one environment is costed at."""

    env_region: str | None  # the environment's own region; None: environment-agnostic
    region: str  # where it is priced: env_region, or pricing.unpinned_region
    priced_from: str  # whose figures are read: `region`, or the region it is assumed_from
    assumption: str | None  # why `region` borrows `priced_from`'s figures (None: its own)
    prices: dict[str, Price]  # instance type -> price, from `priced_from`

    def usd_per_hour(self, instance_type: str) -> float:
        price = self.prices.get(instance_type)
        if price is None:
            raise MissingPrice(f"no {self.region} price for {instance_type} in {CATALOG_LABEL}")
        return price.usd_per_hour

    def describe(self, instance_types: list[str]) -> str:
        """What a cost report prints about the prices it used: the region, each type's price, whether the
        region borrows another's (ASSUMED, with the catalog's reason), and each price's source and date."""
        where = self.region if self.env_region else f"{self.region} (no region in the config: pricing.unpinned_region)"
        priced = [(t, p) for t in instance_types if (p := self.prices.get(t)) is not None]
        line = f"{where}: " + ", ".join(f"{t} ${p.usd_per_hour}/h" for t, p in priced) + " on demand"
        if self.assumption:
            line += f"; ASSUMED at {self.priced_from}'s list: {self.assumption}"
        sources = "; ".join(f"{t}: {p.source}, as of {p.as_of}" for t, p in priced)
        return f"{line}; sources ({CATALOG_LABEL} {_path(self.priced_from)}): {sources}"

    def short(self) -> str:
        """'ap-northeast-1 prices, ASSUMED at us-east-1's list': for one-line outputs."""
        where = f"{self.region} prices" + ("" if self.env_region else " (no region in the config: unpinned_region)")
        if self.assumption:
            return f"{where}, ASSUMED at {self.priced_from}'s list"
        return where


def _path(region: str) -> str:
    return field_path("pricing", "regions", region)


def pricing_region(region: str | None, catalog: Catalog) -> str:
    return region or catalog.pricing.unpinned_region


def prices_in(region: str | None, catalog: Catalog) -> RegionalPrices:
    """The prices an environment deploying to `region` (None: environment-agnostic) is costed at.

    A region the catalog does not price gets no prices, so each lookup fails with MissingPrice."""
    priced = pricing_region(region, catalog)
    entry = catalog.pricing.regions.get(priced)
    if entry is None:
        return RegionalPrices(region, priced, priced, None, {})
    source = entry.assumed_from or priced
    figures = catalog.pricing.regions[source].instance_types if source in catalog.pricing.regions else {}
    return RegionalPrices(region, priced, source, entry.assumption if entry.assumed_from else None, dict(figures))


def prices_for(cfg: EnvironmentConfig, catalog: Catalog) -> RegionalPrices:
    return prices_in(cfg.region, catalog)


def configured_types(cfg: EnvironmentConfig) -> list[str]:
    """Every instance type the environment may run on, pools included, in config order."""
    return list(dict.fromkeys(t for v in cfg.variants for t in v.instance_types))


def variant_prices(cfg: EnvironmentConfig, catalog: Catalog) -> dict[str, float]:
    """USD per instance-hour of each variant's preferred type, where the environment is priced."""
    prices = prices_for(cfg, catalog)
    return {v.name: prices.usd_per_hour(v.instance_type) for v in cfg.variants}


def describe_prices(cfg: EnvironmentConfig, catalog: Catalog) -> str:
    return prices_for(cfg, catalog).describe(configured_types(cfg))


def missing_price(env_name: str, region: str | None, instance_type: str, catalog: Catalog) -> str | None:
    """Why `env_name` cannot be priced for `instance_type` where it deploys, or None when it can: the synth
    refusal's text, naming the environment, the region, the type and where in which file to add it."""
    prices = prices_in(region, catalog)
    if instance_type in prices.prices:
        return None
    where = (
        f"deploys to {prices.region}"
        if region
        else f"has no region, so it is priced in {prices.region} ({CATALOG_LABEL} pricing.unpinned_region)"
    )
    regions = catalog.pricing.regions
    if prices.region not in regions:
        has = (
            f"{CATALOG_LABEL} prices no instance type in {prices.region} (priced regions: {', '.join(sorted(regions))})"
        )
    else:
        listed = ", ".join(prices.prices) or "none"
        borrowed = f", read from {prices.priced_from}'s (assumed_from)" if prices.assumption else ""
        has = f"{CATALOG_LABEL} has no {prices.region} price for it ({_path(prices.region)} lists {listed}{borrowed})"
    add = (
        f"add {instance_type}'s on-demand SageMaker real-time inference price in {prices.region} (usd_per_hour, "
        f"as_of, source) under {_path(prices.region)}.instance_types in {CATALOG_LABEL}"
    )
    if prices.assumption:
        add += f" (in place of its assumed_from), or {prices.priced_from}'s under {_path(prices.priced_from)}"
    return f"{environment_label(env_name)} {where} and runs {instance_type}, but {has}: {add}"


def catalog_price_problems(catalog: Catalog) -> list[Problem]:
    """What relates `pricing` to itself and to `instance_types`: priced types exist, a stand-in names a region
    with figures of its own and says why, and the unpinned region is priced."""
    pricing = catalog.pricing
    problems: list[Problem] = []
    if pricing.unpinned_region not in pricing.regions:
        problems += refuse(
            "pricing.unpinned_region",
            f"{pricing.unpinned_region!r} is not in pricing.regions (priced: {', '.join(sorted(pricing.regions))})",
        )
    for region, entry in pricing.regions.items():
        path = _path(region)
        problems += [
            (field_path("pricing", "regions", region, "instance_types", t), f"{t!r} is not in instance_types")
            for t in entry.instance_types
            if t not in catalog.instance_types
        ]
        if entry.assumed_from is None:
            if not entry.instance_types:
                problems.append((path, "lists no instance_types (or stands in for another region: assumed_from)"))
            if entry.assumption is not None:
                problems.append((f"{path}.assumption", "only with assumed_from"))
            continue
        if entry.instance_types:
            problems.append((path, "has instance_types and assumed_from: give one"))
        if entry.assumption is None:
            problems.append((f"{path}.assumption", "required with assumed_from: say why no figure of its own"))
        source = pricing.regions.get(entry.assumed_from)
        if source is None or source.assumed_from is not None:
            problems += refuse(
                f"{path}.assumed_from",
                f"{entry.assumed_from!r} must be a region in pricing.regions with its own prices",
            )
    return problems
