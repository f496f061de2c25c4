"""Deploy guards on their own: a bare stack and the fewest props. The real environments' rules are tested in
tests/stacks/test_deploy_guards.py."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk.assertions import Template

from constructs.deploy_guards import DeployGuardsProps, add_deploy_guards


def guarded(props: DeployGuardsProps) -> dict:
    stack = cdk.Stack(cdk.App(), "Guards")
    add_deploy_guards(stack, props)
    return Template.from_stack(stack).to_json()


def test_nothing_to_refuse_adds_no_rule_and_no_parameter() -> None:
    template = guarded(DeployGuardsProps("dev", "config/environments/dev.yaml"))
    assert set(template["Rules"]) == {"CheckBootstrapVersion"}  # the synthesizer's own
    assert "AcceptAssumedCapacity" not in template["Parameters"]


def test_each_refusal_names_the_environment_and_what_to_do() -> None:
    props = DeployGuardsProps(
        "prod", "config/environments/prod.yaml", assumed_types=("ml.g6.xlarge",), paging_placeholders=("a@b.c",)
    )
    rules = guarded(props)["Rules"]
    (assumed,) = rules["NoDeployOnAssumedCapacity"]["Assertions"]
    assert assumed["AssertDescription"].startswith("prod is production and the capacity of ml.g6.xlarge is assumed")
    (placeholder,) = rules["NoProductionPagingPlaceholder"]["Assertions"]
    assert placeholder["AssertDescription"].endswith("put the on-call destination in config/environments/prod.yaml")
