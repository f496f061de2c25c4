"""Prices where the endpoint runs (config/catalog.yaml `pricing`, config.domain.prices, config.checks.prices):
an environment is priced in its region, and one whose region has no price for a type it runs is refused
at synth, through the same config validation as every other refusal."""

from __future__ import annotations

import copy

import pytest

from config import ConfigError, load_catalog, load_config_file
from config.domain.prices import prices_in
from config.loader import CATALOG_FILE, ENVIRONMENTS_DIR, read_yaml, validate_catalog

PROD_TYPES = list(
    dict.fromkeys(
        t
        for v in read_yaml(ENVIRONMENTS_DIR / "prod.yaml")["variants"]
        for t in (v["instance_type"], *v.get("fallback_instance_types", []))
    )
)


def _catalog(mutate) -> object:
    raw = copy.deepcopy(read_yaml(CATALOG_FILE))
    mutate(raw["pricing"])
    return validate_catalog(raw, "config/catalog.yaml")


def test_a_region_without_prices_is_refused_naming_environment_region_type_and_file(problems) -> None:
    unpriced = "eu-west-1"
    assert unpriced not in load_catalog().pricing.regions  # a known AWS region the catalog does not price

    found = problems(lambda raw: raw.update(region=unpriced))

    refusals = [p for p in found if "price" in p]
    assert len(refusals) == len(PROD_TYPES)  # one per type prod runs, pools included
    for instance_type in PROD_TYPES:
        assert any(
            f"config/environments/prod.yaml deploys to {unpriced} and runs {instance_type}, but config/catalog.yaml "
            f"prices no instance type in {unpriced}"
            in p
            and f"under pricing.regions.{unpriced}.instance_types in config/catalog.yaml" in p
            for p in refusals
        ), refusals


def test_a_fallback_type_without_a_price_is_refused_at_its_pool(tmp_path, monkeypatch) -> None:
    """Tokyo with figures of its own that leave out one of prod's fallback types."""
    priced, missing = PROD_TYPES[0], PROD_TYPES[-1]
    assert priced != missing

    def own_tokyo_prices(pricing: dict) -> None:
        figures = pricing["regions"]["us-east-1"]["instance_types"]
        pricing["regions"]["ap-northeast-1"] = {"instance_types": {priced: figures[priced]}}

    monkeypatch.setattr("config.loader.load_catalog", lambda: _catalog(own_tokyo_prices))
    with pytest.raises(ConfigError) as error:
        load_config_file(ENVIRONMENTS_DIR / "prod.yaml", "prod")

    (path, message), *others = [p for p in error.value.problems if "price" in p[1]]
    assert others == []
    assert path == "variants[0].fallback_instance_types[0]"
    assert message.startswith(
        f"config/environments/prod.yaml deploys to ap-northeast-1 and runs {missing}, but config/catalog.yaml has "
        f"no ap-northeast-1 price for it (pricing.regions.ap-northeast-1 lists {priced}): add {missing}'s on-demand "
        "SageMaker real-time inference price in ap-northeast-1"
    )


def test_an_environment_without_a_region_is_priced_in_the_unpinned_region(monkeypatch) -> None:
    catalog = load_catalog()
    assert prices_in(None, catalog).region == catalog.pricing.unpinned_region
    assert "(no region in the config" in prices_in(None, catalog).short()

    def drop_g5(pricing: dict) -> None:
        del pricing["regions"][pricing["unpinned_region"]]["instance_types"]["ml.g5.xlarge"]

    monkeypatch.setattr("config.loader.load_catalog", lambda: _catalog(drop_g5))
    with pytest.raises(ConfigError) as error:
        load_config_file(ENVIRONMENTS_DIR / "dev.yaml", "dev")
    assert any(
        message.startswith(
            f"config/environments/dev.yaml has no region, so it is priced in {catalog.pricing.unpinned_region} "
            "(config/catalog.yaml pricing.unpinned_region) and runs ml.g5.xlarge, but"
        )
        for _, message in error.value.problems
    ), error.value.problems


def test_a_stand_in_region_must_say_why_and_borrow_real_figures() -> None:
    def unexplained(pricing: dict) -> None:
        pricing["regions"]["eu-west-1"] = {"assumed_from": "us-east-1"}

    def chained(pricing: dict) -> None:
        pricing["regions"]["eu-west-1"] = {"assumed_from": "ap-northeast-1", "assumption": "a test"}

    def unknown_type(pricing: dict) -> None:
        pricing["regions"]["us-east-1"]["instance_types"]["ml.g9.xlarge"] = {
            "usd_per_hour": 1.0,
            "as_of": "2026-11",
            "source": "a test",
        }

    for mutate, expected in (
        (unexplained, ("pricing.regions.eu-west-1.assumption", "required with assumed_from")),
        (chained, ("pricing.regions.eu-west-1.assumed_from", "'ap-northeast-1' must be a region in pricing.regions")),
        (unknown_type, ("pricing.regions.us-east-1.instance_types.ml.g9.xlarge", "'ml.g9.xlarge' is not in")),
    ):
        with pytest.raises(ConfigError) as error:
            _catalog(mutate)
        assert any(path == expected[0] and message.startswith(expected[1]) for path, message in error.value.problems)


def test_a_stand_in_is_priced_at_its_source_and_says_assumed() -> None:
    catalog = load_catalog()
    stand_ins = {name: r for name, r in catalog.pricing.regions.items() if r.assumed_from}
    for region, entry in stand_ins.items():
        prices = prices_in(region, catalog)
        assert prices.prices == catalog.pricing.regions[entry.assumed_from].instance_types
        assert f"ASSUMED at {entry.assumed_from}'s list: {entry.assumption}" in prices.describe(list(prices.prices))
