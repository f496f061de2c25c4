"""The AWS Budgets limit the serving stack deploys (`alarms.monthly_budget_usd`, constructs/cost_budget.py).

The figure is the planner's: the configured scenario's monthly cost (the environment's scaling simulated on
its `planning.traffic` at its region's prices, as `make plan`'s first scenario) times `alarms.budget_margin`.
Synth reads the figure and simulates nothing; `bin/plan ENV --write-config` writes it, and `bin/plan ENV`
fails while it is stale (a change of scaling, capacity, prices or traffic since it was written), so the PR
that moves the cost also moves the budget. Compared in whole dollars: the amount the budget is deployed with.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.editor import edit_environment_file
from config.loader import environment_file
from config.prices import variant_prices
from config.schema import Catalog, EnvironmentConfig
from workbench.planner.build import limits, variant_models
from workbench.planner.environment_traffic import traffic_for
from workbench.planner.formatting import format_usd
from workbench.planner.simulate import simulate
from workbench.planner.totals import add_totals

FIELD = "alarms.monthly_budget_usd"


def planned_monthly_cost_usd(cfg: EnvironmentConfig, catalog: Catalog) -> float:
    """The configured scenario's monthly cost on planning.traffic, as build_plan's first scenario costs it
    (tests/workbench/planner/test_budget_limit.py holds the two equal)."""
    traffic = traffic_for(cfg.planning.traffic)
    scenario = simulate(
        variant_models(cfg, catalog, traffic, with_schedules=True),
        list(traffic.requests_per_minute),
        traffic.start,
        key="configured",
        title="Configured: schedules + policies",
        provisioning_minutes=cfg.planning.provisioning_minutes,
        **limits(cfg),
    )
    return add_totals(scenario, variant_prices(cfg, catalog)).total.monthly_cost_usd


@dataclass(frozen=True)
class BudgetLimit:
    """The figure in the environment's file against the one the planner computes now."""

    env: str
    found: float  # alarms.monthly_budget_usd
    monthly_cost_usd: float  # the configured scenario's on planning.traffic
    margin: float  # alarms.budget_margin

    @property
    def expected(self) -> int:
        return round(self.monthly_cost_usd * self.margin)

    @property
    def stale(self) -> bool:
        return round(self.found) != self.expected

    def line(self) -> str:
        """One line for the plan's verdict; a stale figure's says what to run."""
        how = (
            f"the configured cost on planning.traffic ({format_usd(self.monthly_cost_usd)}/month) x alarms.budget_margin"
            f" {self.margin:g}"
        )
        if not self.stale:
            return f"AWS Budgets limit: {FIELD} {format_usd(self.found)} is {how}: up to date."
        return (
            f"AWS Budgets limit: {FIELD} is {format_usd(self.found)}, expected {format_usd(self.expected)} ({how}):"
            f" stale, run `bin/plan {self.env} --write-config`: not met."
        )


def budget_limit(cfg: EnvironmentConfig, catalog: Catalog) -> BudgetLimit:
    return BudgetLimit(
        cfg.name, cfg.alarms.monthly_budget_usd, planned_monthly_cost_usd(cfg, catalog), cfg.alarms.budget_margin
    )


def write_budget_limit(cfg: EnvironmentConfig, catalog: Catalog) -> str:
    """Write the planner's figure into ENV's file (validated, comments kept): the diff, or a line saying it
    was already up to date."""
    limit = budget_limit(cfg, catalog)
    if not limit.stale:
        return f"{FIELD} {format_usd(limit.found)} is up to date"

    def change(doc) -> None:
        doc["alarms"]["monthly_budget_usd"] = limit.expected

    edit = edit_environment_file(environment_file(cfg.name), change)
    edit.write()
    return edit.diff()
