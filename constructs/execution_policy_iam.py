"""The IAM part of the CloudFormation execution policy (constructs/execution_policy.py): what keeps a
deploy from widening itself (issue 38). Without it, a template adding an AdministratorAccess role trusted
by the deployer goes through. So CloudFormation may:
- create a role or change its policies or boundary only with the boundary
  `MangaAssistGuard-StackRoleBoundary` (`iam:PermissionsBoundary`, listed for CreateRole, PutRolePolicy,
  AttachRolePolicy, PutRolePermissionsBoundary, DeleteRolePolicy, DetachRolePolicy and
  DeleteRolePermissionsBoundary in the Service Authorization Reference; parliament's copy,
  iam_definition.json, is what tests/stacks/test_iam_lint.py checks against);
- create, version, delete or attach no managed policy, nor detach those people wear (`iam:PolicyARN`;
  issue 51: they are the administrator-deployed access stack's, the stacks' roles have inline policies);
- rewrite no trust (`UpdateAssumeRolePolicy` takes no condition key; stack roles trust a fixed service);
- pass a role only to the services that take the stacks' roles (`iam:PassedToService`);
- never remove a boundary (as AWS's example boundary AWSCODAPermissionsBoundary excludes it);
- write only the stacks' roles (IAM path `role/mangaassist/*`, constructs/role_path.py: CloudFormation
  cuts a generated name to 64 characters but never a path, issue 50 §1), never the guard policies
  (`MangaAssistGuard-*`), the roles people and the pipeline wear, or CDK's roles.
The Deny statements repeat the conditions so they hold beside a wider policy (`make bootstrap
EXECUTION_POLICIES=…`): an explicit Deny wins (IAM User Guide, "Policy evaluation logic").
"""

from __future__ import annotations

from config.access import GUARD_PREFIX, PEOPLE_POLICIES, PEOPLE_ROLES, ROLE_PATH_ROOT, STACK_ROLE_BOUNDARY
from config.naming import PROJECT

# The services the stacks hand a role to, each with the resource that does (iam:PassedToService).
PASSED_TO = (
    "application-autoscaling.amazonaws.com",  # AWS::ApplicationAutoScaling::ScalableTarget RoleARN
    "codebuild.amazonaws.com",  # AWS::CodeBuild::Project ServiceRole
    "lambda.amazonaws.com",  # AWS::Lambda::Function Role
    "sagemaker.amazonaws.com",  # AWS::SageMaker::Model ExecutionRoleArn
    "states.amazonaws.com",  # AWS::StepFunctions::StateMachine RoleArn
)
SERVICE_LINKED = "sagemaker.application-autoscaling.amazonaws.com"  # RegisterScalableTarget's role
# The handler permissions on a role, by how they are allowed.
BOUNDED = ("iam:CreateRole", "iam:PutRolePolicy", "iam:PutRolePermissionsBoundary")
# Reads, tags, description, deletion: none takes iam:PermissionsBoundary but the two that only narrow
# (DeleteRolePolicy, DetachRolePolicy), left unconditioned so that a role made before its boundary can
# still be cleaned up.
ROLE_PLAIN = (
    "iam:DeleteRole",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
    "iam:GetRole",
    "iam:GetRolePolicy",
    "iam:ListAttachedRolePolicies",
    "iam:ListRolePolicies",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateRole",
    "iam:UpdateRoleDescription",
)
PASS = ("iam:PassRole",)
CREATE_SERVICE_LINKED = ("iam:CreateServiceLinkedRole",)
KNOWN = {*BOUNDED, *ROLE_PLAIN, *PASS, *CREATE_SERVICE_LINKED}
# What gives a role permissions: the boundary is required for each (AttachRolePolicy is denied outright).
GRANTING = (*BOUNDED, "iam:AttachRolePolicy")
GUARD_WRITES = (
    "iam:CreatePolicy",
    "iam:CreatePolicyVersion",
    "iam:DeletePolicy",
    "iam:DeletePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:TagPolicy",
    "iam:UntagPolicy",
)
# Whatever writes a role, its policies or its trust, or hands it to a service (issue 51: the roles people wear).
ROLE_WRITES = (
    *BOUNDED,
    "iam:AttachRolePolicy",
    "iam:DeleteRole",
    "iam:DeleteRolePolicy",
    "iam:DetachRolePolicy",
    "iam:PassRole",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:UpdateRole",
    "iam:UpdateRoleDescription",
)


def boundary_arn(partition: str, account: str) -> str:
    return f"arn:{partition}:iam::{account}:policy/{STACK_ROLE_BOUNDARY}"


def stack_roles(partition: str, account: str) -> list[str]:
    """Every role under the project's path (`role/mangaassist/<env>/<name>`): the name may be cut, the path never."""
    return [f"arn:{partition}:iam::{account}:role{ROLE_PATH_ROOT}*"]


def people_policies(partition: str, account: str) -> list[str]:
    """The access stack's managed policies, every environment's (stacks/ci_access_stack.py)."""
    return [f"arn:{partition}:iam::{account}:policy/{PROJECT}-*-{name}" for name in PEOPLE_POLICIES]


def people_roles(partition: str, account: str) -> list[str]:
    """The access stack's roles, every environment's: the break-glass reader and the pipeline's."""
    return [f"arn:{partition}:iam::{account}:role/{PROJECT}-*-{name}" for name in PEOPLE_ROLES]


def service_linked_role(partition: str, account: str) -> str:
    return f"arn:{partition}:iam::{account}:role/aws-service-role/{SERVICE_LINKED}/*"


def iam_statements(actions: list[str], partition: str, account: str) -> list[dict]:
    """The Allow statements for the IAM actions the handlers declare, then the Deny statements."""
    unknown = set(actions) - KNOWN
    if unknown:
        raise ValueError(f"IAM actions without a rule in constructs/execution_policy_iam.py: {sorted(unknown)}")
    roles, boundary = stack_roles(partition, account), boundary_arn(partition, account)
    with_boundary = {"ArnEquals": {"iam:PermissionsBoundary": boundary}}
    allows = [
        ("IamRolesWithTheBoundary", BOUNDED, roles, with_boundary),
        ("IamRolesOfTheStacks", ROLE_PLAIN, roles, None),
        (
            "IamPassRoleToTheirServices",
            PASS,
            [*roles, service_linked_role(partition, account)],
            {"StringEquals": {"iam:PassedToService": list(PASSED_TO)}},
        ),
        (
            "IamApplicationAutoScalingServiceLinkedRole",
            CREATE_SERVICE_LINKED,
            [service_linked_role(partition, account)],
            {"StringEquals": {"iam:AWSServiceName": SERVICE_LINKED}},
        ),
    ]
    statements = [
        _statement(sid, "Allow", sorted(set(kind) & set(actions)), resources, condition)
        for sid, kind, resources, condition in allows
        if set(kind) & set(actions)
    ]
    return statements + deny_statements(partition, account)


def deny_statements(partition: str, account: str) -> list[dict]:
    """What no other policy of the execution role can allow either."""
    boundary = boundary_arn(partition, account)
    return [
        _statement(
            "DenyRolesWithoutTheBoundary",
            "Deny",
            list(GRANTING),
            ["*"],
            {"ArnNotEquals": {"iam:PermissionsBoundary": boundary}},
        ),
        _statement("DenyAttachingPolicies", "Deny", ["iam:AttachRolePolicy"], ["*"]),
        _statement("DenyRewritingTrust", "Deny", ["iam:UpdateAssumeRolePolicy"], ["*"]),
        _statement(
            "DenyPassingRolesElsewhere",
            "Deny",
            list(PASS),
            ["*"],
            {"StringNotEquals": {"iam:PassedToService": list(PASSED_TO)}},
        ),
        _statement(
            "DenyRemovingBoundaries",
            "Deny",
            ["iam:DeleteRolePermissionsBoundary", "iam:DeleteUserPermissionsBoundary"],
            ["*"],
        ),
        _statement(
            "DenyWritingTheGuardPolicies",
            "Deny",
            list(GUARD_WRITES),
            [f"arn:{partition}:iam::{account}:policy/{GUARD_PREFIX}-*"],
        ),
        _statement("DenyWritingThePeoplesPolicies", "Deny", list(GUARD_WRITES), people_policies(partition, account)),
        _statement(
            "DenyDetachingThePeoplesPolicies",
            "Deny",
            ["iam:DetachRolePolicy"],
            ["*"],
            {"ArnLike": {"iam:PolicyARN": people_policies(partition, account)}},
        ),
        _statement("DenyWritingThePeoplesRoles", "Deny", list(ROLE_WRITES), people_roles(partition, account)),
    ]


def _statement(sid: str, effect: str, actions: list[str], resources: list[str], condition: dict | None = None) -> dict:
    statement = {"Sid": sid, "Effect": effect, "Action": actions, "Resource": resources}
    return {**statement, "Condition": condition} if condition else statement
