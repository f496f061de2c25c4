"""`make review` names a routing change as the blue/green deployment it is (issue 29 §2): RoutingConfig is
create-only, so a new strategy or new prefix-aware settings replace the endpoint config."""

from __future__ import annotations

import copy

import pytest

from config import load_environment
from tests.synthesised import Synthesised
from workbench.review.consequences import deploy_consequences
from workbench.review.iam import IamChanges
from workbench.review.stack_diff import StackDiff

STACK = "MangaAssist-prod-Serving"


@pytest.fixture(scope="module")
def prod() -> dict:
    return Synthesised("prod").serving.to_json()


def variants(template: dict) -> list[dict]:
    (config,) = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"
    ]
    return config["ProductionVariants"]


def consequences(base: dict, head: dict) -> list[str]:
    diff = StackDiff(STACK, changes=[], iam=IamChanges())
    return deploy_consequences("prod", base, head, [diff], load_environment("prod"))


def test_a_switch_to_prefix_aware_routing_is_a_blue_green_deployment(prod) -> None:
    base = copy.deepcopy(prod)  # prod routes PREFIX_AWARE (issue 52); before, LEAST_OUTSTANDING_REQUESTS
    for variant in variants(base):
        variant["RoutingConfig"] = {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    assert consequences(base, prod) == [
        f"variant '{name}' routing LEAST_OUTSTANDING_REQUESTS → PREFIX_AWARE (PrefixLength 2560, "
        "ConcurrencyThreshold 16): the endpoint config is replaced, so this is a blue/green deployment; the green "
        'fleet starts with empty prefix caches (docs/explanation/capacity-model.md "Routing")'
        for name in ("canary", "primary")
    ]


def test_a_new_threshold_alone_is_one_too(prod) -> None:
    base, head = copy.deepcopy(prod), copy.deepcopy(prod)
    for template, threshold in ((base, 20), (head, 12)):
        variants(template)[0]["RoutingConfig"] = {
            "RoutingStrategy": "PREFIX_AWARE",
            "PrefixAwareRoutingConfig": {"PrefixLength": 2560, "ConcurrencyThreshold": threshold},
        }
    (line,) = consequences(base, head)
    assert line.startswith(
        "variant 'primary' routing PREFIX_AWARE (PrefixLength 2560, ConcurrencyThreshold 20) → PREFIX_AWARE "
        "(PrefixLength 2560, ConcurrencyThreshold 12): the endpoint config is replaced"
    )
