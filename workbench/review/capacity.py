"""The capacity-plan comparison of `make plan-diff`, for the review: the planner's own API."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from config.domain.calibration import capacity_provenance
from config.domain.prices import describe_prices
from config.loader import ConfigError, load_catalog, load_config_file
from config.naming import environment_label
from config.schema import EnvironmentConfig
from workbench.planner.build import PlanError, build_plan
from workbench.planner.compare import render_comparison
from workbench.planner.environment_traffic import traffic_for, with_release_calendar
from workbench.planner.traffic import TrafficError


@dataclass(frozen=True)
class PlanComparison:
    changed: bool
    markdown: str  # the comparison, headings one level down; or why there is none


def compare_plans(env: str, base_file: Path, head_file: Path) -> PlanComparison:
    """Both configs on head's planning.traffic, with this checkout's planner and catalog (like plan-diff):
    each environment on its own traffic, so its cost is judged against the frontier found on it."""
    if not head_file.exists():
        return PlanComparison(True, "environment removed: no plan")
    if not base_file.exists():
        return PlanComparison(True, "new environment: no base plan to compare with (`make plan ENV=…`)")
    if base_file.read_bytes() == head_file.read_bytes():
        try:
            stands_on = _stands_on((("", load_config_file(head_file, env)),))
        except ConfigError as error:
            stands_on = f"(config not read: {error})"
        return PlanComparison(False, f"{environment_label(env)} unchanged: same plan; it stands on {stands_on}")
    try:
        base_cfg, head_cfg = (load_config_file(f, env) for f in (base_file, head_file))
        week = traffic_for(head_cfg.planning.traffic)
        # Each side judged in its own release calendar's peak windows, as `make plan` judges it.
        base, head = (
            build_plan(cfg, load_catalog(), with_release_calendar(week, cfg.release_calendar))
            for cfg in (base_cfg, head_cfg)
        )
        comparison = render_comparison(base, head)
        comparison += f"\n\nThe plans stand on: {_stands_on((('base', base_cfg), ('head', head_cfg)))}\n"
    except ConfigError as error:
        return PlanComparison(True, f"not compared: {error}")
    except (PlanError, TrafficError, ValueError) as error:
        return PlanComparison(True, f"not compared: {env}: {error}")
    return PlanComparison(
        True, "\n".join("#" + line if line.startswith("#") else line for line in comparison.splitlines())
    )


def _stands_on(sides: tuple[tuple[str, EnvironmentConfig], ...]) -> str:
    """What capacity each side's plan assumes, whether it was measured (`bin/loadtest`), and what share
    of the instance type's physical ceiling (config/domain/physics.py) it is; and the prices its cost is in (the
    region and their sources, config.domain.prices)."""
    catalog = load_catalog()
    capacities = [
        f"{name}{f' ({side})' if side else ''}: {capacity_provenance(cfg, catalog, name)}"
        for side, cfg in sides
        for name in sorted(cfg.planning.capacity)
    ]
    provisioning = [
        f"provisioning time{f' ({side})' if side else ''}: {cfg.planning.provisioning_provenance()}"
        for side, cfg in sides
    ]
    prices = [f"prices{f' ({side})' if side else ''}: {describe_prices(cfg, catalog)}" for side, cfg in sides]
    return "; ".join(capacities + provisioning + prices)
