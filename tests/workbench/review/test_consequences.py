"""Deploy consequences read from two serving templates: a real synthesised template, then edited the way
a config change would edit it (only the parts the rules read). A routing change is named as the blue/green
deployment it is (issue 29 §2): RoutingConfig is create-only, so a new strategy or new prefix-aware settings
replace the endpoint config."""

from __future__ import annotations

import copy

import pytest

from config import load_environment
from tests.synthesised import Synthesised
from workbench.review.consequences import deploy_consequences
from workbench.review.iam import Grant, IamChanges
from workbench.review.stack_diff import ResourceChange, StackDiff, parse_resources

STACK = "MangaAssist-prod-Serving"


@pytest.fixture(scope="module")
def prod() -> dict:
    return Synthesised("prod").serving.to_json()


def resources(template: dict, kind: str) -> list[dict]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def endpoint_variants(template: dict) -> list[dict]:
    (config,) = resources(template, "AWS::SageMaker::EndpointConfig")
    return config["ProductionVariants"]


def consequences(base: dict, head: dict, *changes: ResourceChange, iam: IamChanges | None = None) -> list[str]:
    diff = StackDiff(STACK, changes=list(changes), iam=iam or IamChanges())
    return deploy_consequences("prod", base, head, [diff], load_environment("prod"))


def test_an_identical_template_has_none(prod) -> None:
    assert consequences(prod, prod) == []


def test_a_scaled_variants_new_instance_type_needs_ops_deploy(prod) -> None:
    head = copy.deepcopy(prod)
    primary = resources(head, "AWS::SageMaker::EndpointConfig")[0]["ProductionVariants"][0]
    primary["InstancePools"] = [  # the pools swapped: ml.g6.xlarge preferred
        {"InstanceType": "ml.g6.xlarge", "Priority": 1},
        {"InstanceType": "ml.g5.xlarge", "Priority": 2},
    ]
    assert consequences(prod, head) == [
        "scaled variant 'primary' instance type ml.g5.xlarge → ml.g6.xlarge: needs `bin/ops deploy prod` "
        "(SageMaker refuses the update while it is registered with autoscaling)"
    ]


def test_a_variant_added_and_one_removed(prod) -> None:
    head = copy.deepcopy(prod)
    variants = resources(head, "AWS::SageMaker::EndpointConfig")[0]["ProductionVariants"]
    variants[1]["VariantName"] = "shadow"
    assert consequences(prod, head) == [
        "variant 'canary' removed: needs `make deploy ENV=prod VARIANTS_CHANGED=1` (no blue/green guardrails), "
        "through `bin/ops deploy prod` since it is scaled",
        "variant 'shadow' added: needs `make deploy ENV=prod VARIANTS_CHANGED=1` (no blue/green guardrails)",
    ]


def test_a_rollback_alarm_removed_and_one_tightened(prod) -> None:
    head = copy.deepcopy(prod)
    endpoint = resources(head, "AWS::SageMaker::Endpoint")[0]
    alarms = endpoint["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    removed = alarms.pop()["AlarmName"]["Ref"]
    tightened = alarms[0]["AlarmName"]["Ref"]
    head["Resources"][tightened]["Properties"]["Threshold"] /= 2  # fires earlier: not a loosening
    path = ResourceChange("modified", "AWS::SageMaker::Endpoint", removed, "Alarms/canary-engine-silent", "")
    assert consequences(prod, head, path) == [
        "rollback alarm Alarms/canary-engine-silent removed: a deploy no longer rolls back on it"
    ]


def test_guardrails_removed_and_iam_broadened(prod) -> None:
    head = copy.deepcopy(prod)
    del resources(head, "AWS::SageMaker::Endpoint")[0]["DeploymentConfig"]
    broadened = IamChanges([Grant("ModelsExecutionRole71BC3EA4", "iam:PassRole", "*")])
    assert consequences(prod, head, iam=broadened) == [
        f"IAM broadened in {STACK}: ModelsExecutionRole: iam:PassRole on *",
        "blue/green guardrails removed: no bake and no automatic rollback on this update",
    ]


def test_the_clis_resource_lines_are_parsed() -> None:
    text = "\n".join(
        [
            "Stack MangaAssist-prod-Serving",
            "Resources",
            "[~] AWS::SageMaker::Model Models/Model-canary ModelsModelcanary3520572D replace",
            "[-] AWS::CloudWatch::Alarm AlarmsOldAB12CD34 destroy",
            "[+] AWS::CloudWatch::Alarm Alarms/new-alarm AlarmsnewalarmAB12CD34 ",
            " └─ [~] PrimaryContainer (requires replacement)",
        ]
    )
    assert parse_resources(text) == [
        ResourceChange(
            "modified", "AWS::SageMaker::Model", "ModelsModelcanary3520572D", "Models/Model-canary", "replace"
        ),
        ResourceChange("removed", "AWS::CloudWatch::Alarm", "AlarmsOldAB12CD34", "", "destroy"),
        ResourceChange("added", "AWS::CloudWatch::Alarm", "AlarmsnewalarmAB12CD34", "Alarms/new-alarm", ""),
    ]


def test_a_switch_to_prefix_aware_routing_is_a_blue_green_deployment(prod) -> None:
    base = copy.deepcopy(prod)  # prod routes PREFIX_AWARE (issue 52); before, LEAST_OUTSTANDING_REQUESTS
    for variant in endpoint_variants(base):
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
        endpoint_variants(template)[0]["RoutingConfig"] = {
            "RoutingStrategy": "PREFIX_AWARE",
            "PrefixAwareRoutingConfig": {"PrefixLength": 2560, "ConcurrencyThreshold": threshold},
        }
    (line,) = consequences(base, head)
    assert line.startswith(
        "variant 'primary' routing PREFIX_AWARE (PrefixLength 2560, ConcurrencyThreshold 20) → PREFIX_AWARE "
        "(PrefixLength 2560, ConcurrencyThreshold 12): the endpoint config is replaced"
    )
