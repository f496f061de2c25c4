"""Every role of every synthesised template has a permissions boundary; the image and serving stacks'
roles have `MangaAssistGuard-StackRoleBoundary`, which allows every action those roles are granted and
denies IAM and KMS administration whatever a role's policies say (issue 38)."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from config.access import STACK_ROLE_BOUNDARY
from constructs.stack_role_boundary import ROLE_ACTIONS, boundary_document
from tests.operator_policy_check import allowed, authorization_reference
from tests.shared_synthesis import cloud_assembly

WIDE = {"Effect": "Allow", "Action": "*", "Resource": "*"}


def synthesised(env_name: str) -> dict[str, dict]:
    """Every stack of the environment, the CI access stack included, as the app builds them (the run's
    shared synthesis, tests/shared_synthesis.py)."""
    assembly = cloud_assembly(env_name)
    return {
        path.name.removesuffix(".template.json"): json.loads(path.read_text())
        for path in assembly.glob("*.template.json")
    }


@pytest.fixture(scope="module")
def templates() -> dict[str, dict]:
    return {name: t for env in ("dev", "staging", "prod") for name, t in synthesised(env).items()}


def roles_without_boundary(template: dict) -> list[str]:
    return [
        lid
        for lid, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Role" and not r.get("Properties", {}).get("PermissionsBoundary")
    ]


def test_every_role_of_every_template_has_a_boundary(templates) -> None:
    assert any(name.endswith("-CiAccess") for name in templates)
    roles = [lid for t in templates.values() for lid, r in t["Resources"].items() if r["Type"] == "AWS::IAM::Role"]
    assert len(roles) >= 20
    assert {name: roles_without_boundary(t) for name, t in templates.items() if roles_without_boundary(t)} == {}


def test_the_check_finds_a_role_without_one() -> None:
    stack = cdk.Stack(cdk.App(), "Unbounded")
    iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    assert roles_without_boundary(Template.from_stack(stack).to_json()) == ["Role1ABCC5F0"]


def test_the_image_and_serving_roles_have_the_guard_boundary(templates) -> None:
    for name, template in templates.items():
        if name.endswith("-CiAccess"):
            continue  # the pipeline's role keeps its own, narrower boundary (constructs/github_deploy_role.py)
        for lid, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Role":
                text = str(resource["Properties"]["PermissionsBoundary"])
                assert f"policy/{STACK_ROLE_BOUNDARY}" in text, (name, lid, text)


def granted_actions(template: dict) -> set[str]:
    """The actions of every policy a stack role holds: inline, DefaultPolicy and attached managed ones."""
    roles = {lid for lid, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Role"}
    found: set[str] = set()
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        attached = [ref.get("Ref") for ref in properties.get("Roles", []) if isinstance(ref, dict)]
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") and set(attached) & roles:
            for statement in properties["PolicyDocument"]["Statement"]:
                action = statement["Action"]
                found |= {action} if isinstance(action, str) else set(action)
    return found


def expanded(action: str) -> list[str]:
    """The actions a pattern covers, from the Service Authorization Reference (parliament's copy)."""
    prefix, name = action.split(":")
    privileges = authorization_reference()[prefix]["privileges"]
    return [f"{prefix}:{p}" for p in privileges if allowed([{**WIDE, "Action": action}], f"{prefix}:{p}", "*", {})]


def test_the_boundary_allows_every_action_the_stack_roles_are_granted(templates) -> None:
    boundary = boundary_document()["Statement"]
    granted = {a for name, t in templates.items() if not name.endswith("-CiAccess") for a in granted_actions(t)}
    assert {"sagemaker:UpdateEndpointWeightsAndCapacities", "s3:GetObject"} <= granted  # the reader role's
    refused = [a for pattern in sorted(granted) for a in expanded(pattern) if not allowed(boundary, a, "*", {})]
    assert refused == []
    inline = {a for name, t in templates.items() if not name.endswith("-CiAccess") for a in granted_actions(t)}
    assert set(ROLE_ACTIONS) <= inline, "ROLE_ACTIONS lists an action no stack role is granted"


@pytest.mark.parametrize(
    "action",
    [
        "iam:CreateRole",
        "iam:AttachRolePolicy",
        "iam:PutRolePolicy",
        "iam:PassRole",
        "iam:CreatePolicyVersion",
        "iam:DeleteRolePermissionsBoundary",
        "iam:CreateAccessKey",
        "kms:PutKeyPolicy",
        "kms:CreateGrant",
        "kms:ScheduleKeyDeletion",
        "kms:DisableKey",
    ],
)
def test_no_role_policy_can_give_a_stack_role_iam_or_kms_administration(action) -> None:
    """A role's effective permissions need the boundary's Allow too: it has none of these, and its Deny
    holds even if the Allow statement were widened to everything."""
    assert not allowed(boundary_document()["Statement"], action, "*", {})
    assert not allowed([*boundary_document()["Statement"], WIDE], action, "*", {})
