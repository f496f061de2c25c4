"""The access stack (stacks/ci_access_stack.py): the people's policies always; with a `ci` section GitHub's
OIDC provider and a role whose trust names this repository, GitHub environment and branch exactly, with the
Deployer and Operator policies under a boundary; clean under cdk-nag, cfn-lint and the IAM linter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from config import load_environment
from constructs.github_deploy_role import MAX_SESSION, VERIFY_AND_SMOKE_ACTIONS
from stacks.ci_access_stack import ServedResources, build_ci_access, ci_access_stack_name
from stacks.environment import add_compliance_checks
from tests.iam_lint import Stack, acknowledged, findings, policy_documents, unacknowledged
from tests.synthesised import CDK_CONTEXT

ROOT = Path(__file__).resolve().parents[2]
PROVIDER = "arn:aws:iam::222222222222:oidc-provider/token.actions.githubusercontent.com"


def synthesise(cfg, *, nag: bool = False, outdir: Path | None = None) -> cdk.Stack:
    """The access stack of `cfg`, after a stand-in for the serving stack whose resources it names."""
    app = cdk.App(context={**CDK_CONTEXT, "env": cfg.name}, outdir=str(outdir) if outdir else None)
    env = cdk.Environment(account=cfg.account, region=cfg.region) if cfg.account else None
    serving = cdk.Stack(app, "ServingStandIn", env=env)
    cdk.CfnWaitConditionHandle(serving, "Nothing")  # a template needs a resource
    for output, value in (
        ("CaptureBucketArn", "arn:aws:s3:::mangaassist-capture"),
        ("CaptureKeyArn", "arn:aws:kms:ap-northeast-1:222222222222:key/k"),
    ):
        cdk.CfnOutput(serving, output, value=value, export_name=f"ServingStandIn:{output}")
    served = ServedResources(
        endpoint_name=cfg.endpoint_name,
        repository_arn="arn:aws:ecr:ap-northeast-1:222222222222:repository/images",
        topic_arns=("arn:aws:sns:ap-northeast-1:222222222222:paging",),
        capture_exports=("ServingStandIn:CaptureBucketArn", "ServingStandIn:CaptureKeyArn")
        if cfg.data_capture.enabled
        else None,
    )
    stack = build_ci_access(app, cfg, served, serving)
    if nag:
        add_compliance_checks(app)
        app.synth()
    return stack


@pytest.fixture(scope="module")
def prod_cfg():
    return load_environment("prod")


@pytest.fixture(scope="module")
def template(prod_cfg) -> Template:
    return Template.from_stack(synthesise(prod_cfg))


def with_ci(cfg, **changes):
    return cfg.model_copy(update={"ci": cfg.ci.model_copy(update=changes)})


def test_the_role_trusts_only_this_repository_environment_and_branch(template, prod_cfg) -> None:
    ci = prod_cfg.ci
    provider = template.find_resources("AWS::IAM::OIDCProvider")
    (provider_id,) = provider
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "RoleName": "MangaAssist-prod-GitHubDeploy",
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": "sts:AssumeRoleWithWebIdentity",
                        "Effect": "Allow",
                        "Principal": {"Federated": {"Ref": provider_id}},
                        "Condition": {
                            "StringEquals": {
                                "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
                                "token.actions.githubusercontent.com:sub": (
                                    f"repo:{ci.github_repository}:environment:prod:ref:refs/heads/main"
                                ),
                            }
                        },
                    }
                ],
            },
        },
    )


def test_the_provider_is_githubs_for_sts_with_no_thumbprint_and_outlives_the_stack(template) -> None:
    template.has_resource(
        "AWS::IAM::OIDCProvider",
        {
            "Properties": {
                "Url": "https://token.actions.githubusercontent.com",
                "ClientIdList": ["sts.amazonaws.com"],
                "ThumbprintList": Match.absent(),
            },
            "DeletionPolicy": "RetainExceptOnCreate",
        },
    )


def test_the_role_has_the_deployer_and_operator_policies_under_a_boundary(template) -> None:
    (boundary_id,) = template.find_resources(
        "AWS::IAM::ManagedPolicy", {"Properties": {"ManagedPolicyName": "MangaAssist-prod-GitHubDeployBoundary"}}
    )
    policies = template.find_resources("AWS::IAM::ManagedPolicy")
    deployer, operator = (
        next(lid for lid, p in policies.items() if p["Properties"]["ManagedPolicyName"] == f"MangaAssist-prod-{name}")
        for name in ("Deployer", "Operator")
    )
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "RoleName": "MangaAssist-prod-GitHubDeploy",
            "ManagedPolicyArns": [{"Ref": deployer}, {"Ref": operator}],
            "PermissionsBoundary": {"Ref": boundary_id},
            "MaxSessionDuration": MAX_SESSION.to_seconds(),
            "Policies": Match.absent(),
        },
    )
    statements = template.to_json()["Resources"][boundary_id]["Properties"]["PolicyDocument"]["Statement"]
    assert [s["Sid"] for s in statements] == [
        "CdkBootstrapRoles",
        "PreflightAccountReads",
        "VerifyAndSmoke",
        "PreflightModelData",
    ]
    assert statements[2]["Action"] == list(VERIFY_AND_SMOKE_ACTIONS)
    assert statements[0]["Action"] == "sts:AssumeRole"
    assert all(
        f"cdk-hnb659fds-{role}-" in json.dumps(statements[0])
        for role in ("deploy-role", "file-publishing-role", "lookup-role")
    )


def test_githubs_default_subject_and_an_existing_provider(prod_cfg) -> None:
    template = Template.from_stack(synthesise(with_ci(prod_cfg, pin_branch=False, oidc_provider=PROVIDER)))

    template.resource_count_is("AWS::IAM::OIDCProvider", 0)
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Principal": {"Federated": PROVIDER},
                            "Condition": {
                                "StringEquals": Match.object_like(
                                    {
                                        "token.actions.githubusercontent.com:sub": (
                                            "repo:example-org/mangaassist-llm-serving:environment:prod"
                                        )
                                    }
                                )
                            },
                        }
                    )
                ]
            }
        },
    )


def test_no_ci_section_no_pipeline_role_but_the_peoples_policies() -> None:
    dev = load_environment("dev")
    assert dev.ci is None
    template = Template.from_stack(synthesise(dev))
    template.resource_count_is("AWS::IAM::OIDCProvider", 0)
    names = {p["Properties"]["ManagedPolicyName"] for p in template.find_resources("AWS::IAM::ManagedPolicy").values()}
    assert names == {"MangaAssist-dev-Operator", "MangaAssist-dev-Deployer"}  # dev captures nothing
    assert not template.find_resources("AWS::IAM::Role")


def test_a_provider_of_another_account_is_refused(prod_cfg) -> None:
    other = "arn:aws:iam::333333333333:oidc-provider/token.actions.githubusercontent.com"
    with pytest.raises(ValueError, match="ci.oidc_provider is in account 333333333333, not in prod's account"):
        synthesise(with_ci(prod_cfg, oidc_provider=other))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("github_repository", "example-org/mangaassist/extra"),
        ("github_repository", "https://github.com/example-org/mangaassist"),
        ("github_environment", "prod:eu"),
        ("branch", "*"),
        ("oidc_provider", "arn:aws:iam::222222222222:oidc-provider/gitlab.com"),
    ],
)
def test_a_malformed_ci_field_is_refused_by_name(problems, field: str, value: str) -> None:
    def mutate(raw: dict) -> None:
        raw["ci"][field] = value

    found = problems(mutate)
    assert len(found) == 1 and found[0].startswith(f"ci.{field}: "), found


def test_the_stack_synthesises_clean_under_cdk_nag_cfn_lint_and_the_iam_linter(prod_cfg, tmp_path: Path) -> None:
    stack = synthesise(prod_cfg, nag=True, outdir=tmp_path)  # an unacknowledged cdk-nag finding raises here
    template_file = tmp_path / f"{ci_access_stack_name('prod')}.template.json"

    lint = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(template_file)], capture_output=True, text=True
    )

    assert lint.returncode == 0, lint.stdout + lint.stderr
    linted = Stack(stack.stack_name, json.loads(template_file.read_text()), "aws", "ap-northeast-1", "222222222222")
    stand_in = json.loads((tmp_path / "ServingStandIn.template.json").read_text())
    exporting = Stack("ServingStandIn", stand_in, "aws", "ap-northeast-1", "222222222222")
    documents = [(where, d) for where, d in policy_documents([linted, exporting]) if where.startswith(stack.stack_name)]
    # Operator, Deployer, CaptureReader and the pipeline's boundary (the linter reads permission policies,
    # not trust policies)
    assert len(documents) == 4
    lines = [line for where, document in documents for line in findings(where, document)]
    assert unacknowledged(lines, acknowledged()) == []


def test_the_stack_is_deployed_with_the_callers_credentials_not_the_bootstrap_roles(prod_cfg, tmp_path: Path) -> None:
    """The pipeline may assume only the bootstrap roles (the Deployer policy): it cannot deploy this stack."""
    synthesise(prod_cfg, nag=True, outdir=tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    properties = manifest["artifacts"][ci_access_stack_name("prod")]["properties"]
    assert "assumeRoleArn" not in properties and "cloudFormationExecutionRoleArn" not in properties
    assert "assumeRoleArn" in manifest["artifacts"]["ServingStandIn"]["properties"]  # the default, for contrast
