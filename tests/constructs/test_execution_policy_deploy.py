"""The stacks' real deploy under the CloudFormation execution policy (issue 38), with the project's own
policy evaluator: every request CloudFormation makes as the execution role for every resource of every
synthesised template of dev, staging and prod (created, updated, read and deleted: tests/deploy_calls.py)
is allowed, on each environment's account; and for an environment named with 16 characters. Roles and functions
get the worst case of the names CloudFormation generates (tests/deploy_calls.py `generated_name`: cut to 64
characters, the stack part to 25), so a policy scoped by stack name fails here (issue 50 §1)."""

from __future__ import annotations

import json

import pytest

from config.access import role_path
from constructs.execution_policy import execution_documents
from tests.deploy_calls import deploy_requests, generated_name
from tests.iam_lint import Stack
from tests.operator_policy_check import allowed
from tests.synthesised import Synthesised

ACCOUNT = "123456789012"  # dev names none
LONG_ENV = "a-sixteen-chars1"  # an environment name of 16 characters


def renamed(stack: Stack, env_name: str, new_name: str) -> Stack:
    """The same stack for an environment called `new_name`: logical ids do not depend on the stack's name."""
    template = json.loads(json.dumps(stack.template).replace(role_path(env_name), role_path(new_name)))
    name = stack.name.replace(f"-{env_name}-", f"-{new_name}-")
    return Stack(name, template, stack.partition, stack.region, stack.account)


@pytest.fixture(scope="module")
def environments(prod, dev) -> list[list[Stack]]:
    found = []
    for synthesised in (prod, dev, Synthesised("staging")):
        cfg = synthesised.cfg
        found.append(
            [
                Stack(stack_name, template.to_json(), "aws", cfg.region or "us-east-1", cfg.account or ACCOUNT)
                for stack_name, template in (
                    (synthesised.image_stack_name, synthesised.image),
                    (synthesised.serving_stack_name, synthesised.serving),
                )
            ]
        )
    found.append([renamed(stack, "prod", LONG_ENV) for stack in found[0]])
    return found


def test_generated_names_are_cut_where_a_stack_name_scope_would_refuse_them() -> None:
    """b022f61's policy allowed `role/MangaAssist-*-Serving-*`: staging's model role is not under it."""
    name = generated_name("MangaAssist-staging-Serving", "ModelsExecutionRole71BC3EA4")
    assert len(name) == 64 and name.startswith("MangaAssist-staging-Servi-")
    assert not name.startswith("MangaAssist-staging-Serving-")


def test_every_stack_role_has_its_environments_path(environments) -> None:
    for stacks in environments:
        env_name = stacks[0].name.split("-")[1] if stacks is not environments[-1] else LONG_ENV
        for stack in stacks:
            roles = [r for r in stack.template["Resources"].values() if r["Type"] == "AWS::IAM::Role"]
            assert roles and all(r["Properties"].get("Path") == role_path(env_name) for r in roles), stack.name


def test_the_real_deploy_is_allowed(environments) -> None:
    refused, count = [], 0
    for stacks in environments:
        account = stacks[0].account
        statements = [s for document in execution_documents("aws", account) for s in document["Statement"]]
        for request in deploy_requests(stacks):
            count += 1
            if not allowed(statements, request.action, request.arn, dict(request.context)):
                refused.append(request.describe())
    assert count > 500  # every resource, every handler permission
    assert refused == [], "the execution policy refuses the stacks' own deploy:\n" + "\n".join(sorted(set(refused)))


def test_the_deploy_creates_roles_with_the_boundary_and_attaches_or_creates_no_managed_policy(environments) -> None:
    """The requests the proof allows are the guarded ones: CreateRole carries the boundary, PassRole names its
    service; no request creates, versions or attaches a managed policy, nor rewrites a trust (issue 51)."""
    requests = [r for stacks in environments for r in deploy_requests(stacks)]
    creates = [r for r in requests if r.action == "iam:CreateRole"]
    passes = [r for r in requests if r.action == "iam:PassRole"]
    assert creates and passes
    assert all(
        dict(r.context).get("iam:PermissionsBoundary", "").endswith("/MangaAssistGuard-StackRoleBoundary")
        for r in creates
    )
    policy_writes = (
        "iam:AttachRolePolicy",
        "iam:CreatePolicy",
        "iam:CreatePolicyVersion",
        "iam:UpdateAssumeRolePolicy",
    )
    assert [r.describe() for r in requests if r.action in policy_writes] == []
    assert {dict(r.context)["iam:PassedToService"] for r in passes} >= {
        "lambda.amazonaws.com",
        "sagemaker.amazonaws.com",
    }
