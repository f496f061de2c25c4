"""The access stack's `MangaAssist-<env>-Operator` and `-Deployer` policies (issue 51: no deploy can change
them): named, output, scoped where AWS allows it; the Operator can neither deploy nor read captured payloads. That they are enough for every
ops command is proved on the ops tests themselves (tests/operator_policy_check.py)."""

from __future__ import annotations

import json
from pathlib import Path

from config import naming
from config.access import SCALING_TAG_KEY
from constructs.deployer_policy import CDK_ROLES, OUTPUT_DEPLOYER_POLICY_ARN, DeployerScope, cdk_role_arn
from constructs.operator_policy import WIDER


def managed_policy(synthesised, name: str) -> tuple[str, dict]:
    policies = synthesised.access.find_resources("AWS::IAM::ManagedPolicy")
    ((logical_id, policy),) = [
        (k, p["Properties"]) for k, p in policies.items() if p["Properties"].get("ManagedPolicyName") == name
    ]
    return logical_id, policy


def statements(synthesised, name: str = "MangaAssist-prod-Operator") -> dict[str, dict]:
    return {s["Sid"]: s for s in managed_policy(synthesised, name)[1]["PolicyDocument"]["Statement"]}


def as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def test_both_named_for_the_environment_output_and_worn_by_no_role_but_the_pipelines(prod) -> None:
    outputs = prod.access.to_json()["Outputs"]
    for name, output in (("Operator", naming.OUTPUT_OPERATOR_POLICY_ARN), ("Deployer", OUTPUT_DEPLOYER_POLICY_ARN)):
        logical_id, _ = managed_policy(prod, f"MangaAssist-prod-{name}")
        assert outputs[output]["Value"] == {"Ref": logical_id}
        wearing = [
            r["Properties"]["RoleName"]
            for r in prod.access.find_resources("AWS::IAM::Role").values()
            if {"Ref": logical_id} in r["Properties"].get("ManagedPolicyArns", [])
        ]
        assert wearing == ["MangaAssist-prod-GitHubDeploy"], name
    serving_and_image = [*prod.serving.to_json()["Resources"].values(), *prod.image.to_json()["Resources"].values()]
    assert not [r for r in serving_and_image if r["Type"] == "AWS::IAM::ManagedPolicy"]


def test_the_operator_cannot_deploy_nor_read_captured_payloads(prod) -> None:
    every_action = [a for s in statements(prod).values() for a in as_list(s["Action"])]
    assert not [a for a in every_action if a.startswith(("sts:", "iam:", "s3:", "kms:", "cloudformation:Create"))]
    assert not [a for a in every_action if "*" in a], "no wildcard actions"
    assert not [
        a
        for a in every_action
        if a.startswith(("sagemaker:Update", "sagemaker:Create", "sagemaker:Delete"))
        and a != "sagemaker:UpdateEndpointWeightsAndCapacities"
    ]


def test_weights_and_invocations_only_on_this_endpoint(prod) -> None:
    endpoint = statements(prod)["Endpoint"]
    assert set(endpoint["Action"]) == {
        "sagemaker:DescribeEndpoint",
        "sagemaker:UpdateEndpointWeightsAndCapacities",
        "sagemaker:InvokeEndpoint",  # InvokeEndpointWithResponseStream is authorised as InvokeEndpoint
    }
    assert json.dumps(endpoint["Resource"]).endswith(':endpoint/mangaassist-llm-prod"]]}')


def test_star_only_where_the_action_takes_no_resource_and_each_wide_statement_has_its_reason(prod) -> None:
    wide = {sid for sid, s in statements(prod).items() if "*" in as_list(s["Resource"])}
    assert wide == {"Metrics", "ScalingRead"}
    assert statements(prod)["Metrics"]["Action"] == "cloudwatch:GetMetricData"
    assert all(":Describe" in a for a in statements(prod)["ScalingRead"]["Action"])
    wildcards = {sid for sid, s in statements(prod).items() if "*" in json.dumps(s["Resource"])}
    assert wildcards <= set(WIDER), f"no written reason for {wildcards - set(WIDER)}"


def test_scaling_writes_only_on_targets_tagged_with_this_endpoint_and_the_targets_carry_the_tag(prod) -> None:
    by_sid = statements(prod)
    write, register, tag = by_sid["ScalingWrite"], by_sid["ScalingRegister"], by_sid["ScalingTag"]
    for statement in (write, register, tag):
        assert json.dumps(statement["Resource"]).endswith(':scalable-target/*"]]}')
    assert write["Condition"] == {"StringEquals": {f"aws:ResourceTag/{SCALING_TAG_KEY}": "mangaassist-llm-prod"}}
    assert register["Condition"]["StringEquals"][f"aws:RequestTag/{SCALING_TAG_KEY}"] == "mangaassist-llm-prod"
    assert register["Condition"]["StringEquals"]["application-autoscaling:service-namespace"] == "sagemaker"
    assert tag["Condition"] == {"StringEquals": {f"aws:RequestTag/{SCALING_TAG_KEY}": "mangaassist-llm-prod"}}
    targets = prod.serving.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    assert len(targets) == 2
    for target in targets.values():
        assert {"Key": SCALING_TAG_KEY, "Value": "mangaassist-llm-prod"} in target["Properties"]["Tags"]


def test_image_repository_and_topics_are_this_environments(prod) -> None:
    repository = statements(prod)["ImageRepository"]["Resource"]
    assert "Fn::ImportValue" in repository and "ImageRepository" in repository["Fn::ImportValue"]
    topics = statements(prod)["Topics"]
    assert topics["Action"] == "sns:ListSubscriptionsByTopic"
    imported = [json.dumps(r) for r in topics["Resource"]]
    assert len(imported) == 2 and all("Fn::ImportValue" in r and "MangaAssist-prod-Serving" in r for r in imported)
    assert "PagingTopic" in imported[0] and "TicketsTopic" in imported[1]


def test_the_deployer_assumes_exactly_the_bootstrap_roles_the_cloud_assembly_names(prod) -> None:
    """The deploy role (stack artifacts' assumeRoleArn), lookup role and the file-publishing role of the
    assets manifest, with CDK's own placeholders; the Deployer names each by its whole ARN."""
    directory = Path(prod.app.synth().directory)
    artifacts = json.loads((directory / "manifest.json").read_text())["artifacts"].values()
    named = set()
    for artifact in artifacts:
        properties = artifact.get("properties", {})
        named |= {properties.get("assumeRoleArn"), properties.get("lookupRole", {}).get("arn")}
        if artifact["type"] == "cdk:asset-manifest":
            files = json.loads((directory / properties["file"]).read_text()).get("files", {})
            # (the access stack's assets are published with the administrator's own credentials: no role)
            named |= {d.get("assumeRoleArn") for f in files.values() for d in f["destinations"].values()}
    named.discard(None)
    scope = DeployerScope("prod", "aws", prod.cfg.region, prod.cfg.account)
    assert {arn.split(":role/")[1] for arn in named} == {
        cdk_role_arn(scope, role).split(":role/")[1] for role in CDK_ROLES
    }
    deployer = statements(prod, "MangaAssist-prod-Deployer")["CdkBootstrapRoles"]
    assert deployer["Action"] == "sts:AssumeRole"
    resources = json.dumps(deployer["Resource"])
    assert "*" not in resources
    assert all(f"cdk-hnb659fds-{role}-" in resources for role in CDK_ROLES)


def test_the_deployer_reads_only_prods_model_data_buckets_for_the_preflight(prod) -> None:
    """`bin/ops preflight` (issue 50 §2): quotas and cost tags have no resource type; buckets by ARN."""
    deployer = statements(prod, "MangaAssist-prod-Deployer")
    assert json.dumps(deployer["PreflightModelData"]["Resource"]).endswith(':s3:::mangaassist-models-prod"]]}')
    assert set(deployer["PreflightAccountReads"]["Action"]) == {
        "ce:ListCostAllocationTags",
        "servicequotas:ListAWSDefaultServiceQuotas",
        "servicequotas:ListServiceQuotas",
    }
