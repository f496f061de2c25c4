"""The plan and the budget cost an environment at its own region's prices, and say which (config.prices)."""

from __future__ import annotations

import copy

import pytest

from config.loader import CATALOG_FILE, load_environment, read_yaml, validate_catalog
from workbench.planner.budget_limit import planned_monthly_cost_usd
from workbench.planner.build import assumptions, build_plan
from workbench.planner.environment_traffic import traffic_for

FACTOR = 1.75  # the test's own Tokyo prices: us-east-1's times this, so the two costs must differ by it


@pytest.fixture(scope="module")
def tokyo_catalog():
    """The shipped catalog with ap-northeast-1 given figures of its own (no stand-in)."""
    raw = copy.deepcopy(read_yaml(CATALOG_FILE))
    regions = raw["pricing"]["regions"]
    regions["ap-northeast-1"] = {
        "instance_types": {
            name: {**price, "usd_per_hour": price["usd_per_hour"] * FACTOR, "source": "this test"}
            for name, price in regions["us-east-1"]["instance_types"].items()
        }
    }
    return validate_catalog(raw, "config/catalog.yaml")


def configured_cost(cfg, catalog) -> float:
    return build_plan(cfg, catalog, traffic_for(cfg.planning.traffic)).scenarios["configured"].total.monthly_cost_usd


def test_the_plan_costs_the_environment_at_its_regions_prices(tokyo_catalog) -> None:
    staging = load_environment("staging")
    assert staging.region == "ap-northeast-1"
    in_virginia = staging.model_copy(update={"region": "us-east-1"})  # the same fleet and traffic, other prices

    tokyo, virginia = configured_cost(staging, tokyo_catalog), configured_cost(in_virginia, tokyo_catalog)

    assert tokyo == pytest.approx(virginia * FACTOR, rel=1e-9)
    assert planned_monthly_cost_usd(staging, tokyo_catalog) == pytest.approx(tokyo, rel=1e-9)  # the budget's


def test_the_plan_says_which_region_and_source_its_prices_are(tokyo_catalog) -> None:
    staging = load_environment("staging")
    line = assumptions(staging, tokyo_catalog, traffic_for(staging.planning.traffic))["prices"]

    assert line.startswith("ap-northeast-1: ml.g5.xlarge $")
    assert "sources (config/catalog.yaml pricing.regions.ap-northeast-1): ml.g5.xlarge: this test" in line
    assert "ASSUMED" not in line
