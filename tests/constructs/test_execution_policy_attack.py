"""Issues 38 and 51 played against the CloudFormation execution policy with the project's own policy evaluator
(tests/operator_policy_check.py `allowed`): a merged template change that adds `MangaAssist-prod-x` with
AdministratorAccess is refused at every step. The stacks' real deploy is allowed:
tests/stacks/test_execution_policy_deploy.py.

The steps name only ARNs and the execution documents, nothing issue 38 added, so that this file runs
unchanged against the execution policy before it: there every step but the boundary's own was allowed."""

from __future__ import annotations

import pytest

from constructs.execution_policy import execution_documents
from tests.operator_policy_check import allowed

ACCOUNT = "222222222222"  # prod's
IAM = f"arn:aws:iam::{ACCOUNT}"
BOUNDARY = f"{IAM}:policy/MangaAssistGuard-StackRoleBoundary"
ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"
NEW_ROLE = f"{IAM}:role/MangaAssist-prod-x"  # the role
STACK_NAMED_ROLE = f"{IAM}:role/mangaassist/prod/MangaAssist-prod-Serving-x"  # the same, where stack roles live (role_path.py)
DEPLOY_ROLE = f"{IAM}:role/MangaAssist-prod-GitHubDeploy"

PEOPLE_ROLE = {"iam:PermissionsBoundary": BOUNDARY}  # the boundary named, so that only the scope refuses it
# (step, action, resource, condition keys IAM sees)
ATTACK = [
    ("create the role without a boundary", "iam:CreateRole", NEW_ROLE, {}),
    ("create it under a stack's name, without a boundary", "iam:CreateRole", STACK_NAMED_ROLE, {}),
    (
        "create it with AdministratorAccess as its boundary",
        "iam:CreateRole",
        STACK_NAMED_ROLE,
        {"iam:PermissionsBoundary": ADMIN},
    ),
    ("attach AdministratorAccess", "iam:AttachRolePolicy", NEW_ROLE, {"iam:PolicyARN": ADMIN}),
    (
        "attach AdministratorAccess to a bounded stack role",
        "iam:AttachRolePolicy",
        STACK_NAMED_ROLE,
        {"iam:PolicyARN": ADMIN, "iam:PermissionsBoundary": BOUNDARY},
    ),
    ("put an inline policy on an unbounded role", "iam:PutRolePolicy", STACK_NAMED_ROLE, {}),
    ("put an inline policy on the pipeline's own role", "iam:PutRolePolicy", DEPLOY_ROLE, {}),
    ("trust the deployer from the pipeline's own role", "iam:UpdateAssumeRolePolicy", DEPLOY_ROLE, {}),
    (
        "remove a stack role's boundary",
        "iam:DeleteRolePermissionsBoundary",
        STACK_NAMED_ROLE,
        {"iam:PermissionsBoundary": BOUNDARY},
    ),
    (
        "swap a stack role's boundary for AdministratorAccess",
        "iam:PutRolePermissionsBoundary",
        STACK_NAMED_ROLE,
        {"iam:PermissionsBoundary": ADMIN},
    ),
    (
        "widen an execution policy",
        "iam:CreatePolicyVersion",
        f"{IAM}:policy/MangaAssistGuard-CloudFormationExecution-1",
        {},
    ),
    (
        "widen an execution policy (its name before issue 38)",
        "iam:CreatePolicyVersion",
        f"{IAM}:policy/MangaAssist-CloudFormationExecution-1",
        {},
    ),
    ("widen the boundary", "iam:CreatePolicyVersion", BOUNDARY, {}),
    ("make a widened version the default", "iam:SetDefaultPolicyVersion", BOUNDARY, {}),
    ("pass a stack role to EC2", "iam:PassRole", STACK_NAMED_ROLE, {"iam:PassedToService": "ec2.amazonaws.com"}),
    ("pass the new role to SageMaker", "iam:PassRole", NEW_ROLE, {"iam:PassedToService": "sagemaker.amazonaws.com"}),
    ("put an inline policy on a person's role", "iam:PutRolePolicy", f"{IAM}:role/PlatformEngineer", PEOPLE_ROLE),
]

# Issue 51: what a person wears. Each step names the stack-role boundary where IAM would see it, so that only
# the people's own statements refuse it (the boundary alone lets a stack role be written).
PEOPLE = {"iam:PermissionsBoundary": BOUNDARY}
OPERATOR, DEPLOYER, READER_POLICY = (
    f"{IAM}:policy/MangaAssist-prod-{n}" for n in ("Operator", "Deployer", "CaptureReader")
)
READER_ROLE = f"{IAM}:role/MangaAssist-prod-CaptureReader"
SOMEONES_ROLE = f"{IAM}:role/PlatformEngineer"  # a human role that wears the Operator policy
PEOPLES_ATTACK = [
    *(
        ("version " + p.rsplit("-", 1)[1] + " to Action *", "iam:CreatePolicyVersion", p, {})
        for p in (OPERATOR, DEPLOYER, READER_POLICY)
    ),
    ("make a widened Operator version the default", "iam:SetDefaultPolicyVersion", OPERATOR, {}),
    ("create the Operator policy anew", "iam:CreatePolicy", OPERATOR, {}),
    ("delete the Operator policy", "iam:DeletePolicy", OPERATOR, {}),
    (
        "widen the pipeline's boundary",
        "iam:CreatePolicyVersion",
        f"{IAM}:policy/MangaAssist-prod-GitHubDeployBoundary",
        {},
    ),
    (
        "attach the Operator policy to a stack role",
        "iam:AttachRolePolicy",
        STACK_NAMED_ROLE,
        {**PEOPLE, "iam:PolicyARN": OPERATOR},
    ),
    ("attach a policy to the reader role", "iam:AttachRolePolicy", READER_ROLE, {**PEOPLE, "iam:PolicyARN": OPERATOR}),
    (
        "detach the Operator policy from a person's role",
        "iam:DetachRolePolicy",
        SOMEONES_ROLE,
        {"iam:PolicyARN": OPERATOR},
    ),
    ("attach a policy to a person's role", "iam:AttachRolePolicy", SOMEONES_ROLE, {**PEOPLE, "iam:PolicyARN": ADMIN}),
    ("put an inline policy on the reader role", "iam:PutRolePolicy", READER_ROLE, PEOPLE),
    ("put an inline policy on the pipeline's role", "iam:PutRolePolicy", DEPLOY_ROLE, PEOPLE),
    ("create the reader role anew, trusting the deployer", "iam:CreateRole", READER_ROLE, PEOPLE),
    ("trust the deployer from the reader role", "iam:UpdateAssumeRolePolicy", READER_ROLE, {}),
    ("trust the deployer from a stack role", "iam:UpdateAssumeRolePolicy", STACK_NAMED_ROLE, {}),
    ("pass the reader role to Lambda", "iam:PassRole", READER_ROLE, {"iam:PassedToService": "lambda.amazonaws.com"}),
]

# Steps on resources no Deny names: only the Allow statements' scope (the stacks' own roles and policies)
# keeps CloudFormation away from them.
KEPT_OUT_BY_SCOPE = {
    "put an inline policy on the pipeline's own role",
    "trust the deployer from the pipeline's own role",
    "widen an execution policy (its name before issue 38)",
    "pass the new role to SageMaker",
    "put an inline policy on a person's role",  # any role of the account: only the stacks' own are in scope
}


@pytest.fixture(scope="module")
def statements() -> list[dict]:
    return [s for document in execution_documents("aws", ACCOUNT) for s in document["Statement"]]


@pytest.mark.parametrize(("step", "action", "resource", "context"), ATTACK, ids=[a[0] for a in ATTACK])
def test_every_step_of_the_escalation_is_denied(statements, step, action, resource, context) -> None:
    assert not allowed(statements, action, resource, context), f"allowed: {step} ({action} on {resource})"


def test_the_escalation_is_refused_whatever_else_the_execution_role_is_given(statements) -> None:
    """`make bootstrap EXECUTION_POLICIES=…` can add a wider policy: the Deny statements still hold."""
    wide = [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
    for step, action, resource, context in ATTACK:
        if step in KEPT_OUT_BY_SCOPE:
            continue
        assert not allowed(statements + wide, action, resource, context), step


@pytest.mark.parametrize(("step", "action", "resource", "context"), PEOPLES_ATTACK, ids=[a[0] for a in PEOPLES_ATTACK])
def test_a_deploy_cannot_change_what_a_person_may_do(statements, step, action, resource, context) -> None:
    """Issue 51: the policies and roles people wear are refused to the execution role, by its own Deny
    statements, so also when `make bootstrap EXECUTION_POLICIES=…` gives it a wider policy."""
    wide = [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
    assert not allowed(statements, action, resource, context), f"allowed: {step}"
    assert not allowed(statements + wide, action, resource, context), f"allowed with a wider policy: {step}"


def test_the_steps_are_refused_for_what_they_name_not_for_their_shape(statements) -> None:
    """The same calls on a stack role the deploy owns are allowed: the refusals above are the people's."""
    assert allowed(statements, "iam:PutRolePolicy", STACK_NAMED_ROLE, PEOPLE)
    assert allowed(statements, "iam:CreateRole", STACK_NAMED_ROLE, PEOPLE)
    # Outside the stacks' path a stack-like name is no stack role (issue 50 §1: scoped by path, not by name).
    assert not allowed(statements, "iam:CreateRole", f"{IAM}:role/MangaAssist-prod-Serving-x", PEOPLE)
    assert allowed(statements, "iam:DetachRolePolicy", STACK_NAMED_ROLE, {"iam:PolicyARN": f"{IAM}:policy/Other"})
