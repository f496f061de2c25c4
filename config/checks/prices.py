"""Every instance type an environment may run on has a price where it deploys (config/catalog.yaml
`pricing`, config.domain.prices): the budget, the plan and the stack's cost outputs are computed at synth from
those prices, so a missing one would be a cost report in another region's money, or none."""

from __future__ import annotations

from config.checks.identity import known_regions
from config.checks.variants import pool_types
from config.domain.prices import missing_price
from config.problems import Problem, field_path
from config.schema import Catalog, EnvironmentConfig
from config.sections import is_none, skip_invalid


def check_prices(cfg: EnvironmentConfig, catalog: Catalog, env_name: str) -> list[Problem]:
    """One refusal per unpriced type, at the first pool that runs it; an unknown type or region is reported
    by config.checks.variants and config.checks.identity, not here."""
    region = None if is_none(cfg.region) else cfg.region
    if region is not None and region not in known_regions():
        return []
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, v in enumerate(cfg.variants):
        for field, instance_type in skip_invalid(pool_types, v):
            if instance_type in seen or instance_type not in catalog.instance_types:
                continue
            seen.add(instance_type)
            message = missing_price(env_name, region, instance_type, catalog)
            if message:
                problems.append((field_path("variants", index, field), message))
    return problems
