"""The IAM part of the CloudFormation execution policy (constructs/execution_policy.py): what keeps a
deploy from widening itself (issue 38).

Without it, whoever may deploy is an administrator: a template that adds a role with AdministratorAccess,
trusted by the deploying principal, goes through. So CloudFormation may:
- create a role, put an inline policy on it, attach a policy to it or set its boundary only when the
  role's boundary is `MangaAssistGuard-StackRoleBoundary` (`iam:PermissionsBoundary`, type ARN: "Filters
  access if the specified policy is set as the permissions boundary on the IAM entity (user or role)";
  the Service Authorization Reference, "Actions, resources, and condition keys for AWS Identity and Access
  Management", lists it for CreateRole, PutRolePolicy, AttachRolePolicy, PutRolePermissionsBoundary,
  DeleteRolePolicy, DetachRolePolicy and DeleteRolePermissionsBoundary; parliament's copy,
  iam_definition.json, is what tests/stacks/test_iam_lint.py checks the conditions against);
- attach only the stacks' own managed policies (`iam:PolicyARN`, type ARN: "Filters access by the ARN of
  an IAM policy", listed for AttachRolePolicy);
- pass a role only to the services that take the stacks' roles (`iam:PassedToService`: "Filters access
  by the AWS service to which this role is passed");
- never remove a boundary (no `DeleteRolePermissionsBoundary`; AWS's own example boundary for delegated
  role creation, AWSCODAPermissionsBoundary, excludes it the same way);
- write only the roles and policies the stacks create (roles by their IAM path, `role/mangaassist/*`, which
  constructs/role_path.py gives every stack role: CloudFormation cuts a generated role name to 64 characters,
  stack name included, but never a path (issue 50 §1);
  `policy/MangaAssist-<env>-{Operator,Deployer,CaptureReader}`), never the guard policies
  (`MangaAssistGuard-*`: the execution policies and the boundary), the GitHub deploy role or CDK's roles.
The explicit Deny statements repeat the conditions so that they hold even when the execution role gets
another, wider policy (`make bootstrap EXECUTION_POLICIES=…`): an explicit Deny wins over any Allow
(IAM User Guide, "Policy evaluation logic").
"""

from __future__ import annotations

from config.access import GUARD_PREFIX, ROLE_PATH_ROOT, STACK_POLICIES, STACK_ROLE_BOUNDARY
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
ATTACH = ("iam:AttachRolePolicy",)
# Reads, tags, trust, description, deletion: none takes iam:PermissionsBoundary but the two that only
# narrow (DeleteRolePolicy, DetachRolePolicy), left unconditioned so that a role made before its boundary
# can still be cleaned up.
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
    "iam:UpdateAssumeRolePolicy",
    "iam:UpdateRole",
    "iam:UpdateRoleDescription",
)
POLICY_ACTIONS = (
    "iam:CreatePolicy",
    "iam:CreatePolicyVersion",
    "iam:DeletePolicy",
    "iam:DeletePolicyVersion",
    "iam:GetPolicy",
    "iam:GetPolicyVersion",
    "iam:ListEntitiesForPolicy",
    "iam:ListPolicyVersions",
)
PASS = ("iam:PassRole",)
CREATE_SERVICE_LINKED = ("iam:CreateServiceLinkedRole",)
KNOWN = {*BOUNDED, *ATTACH, *ROLE_PLAIN, *POLICY_ACTIONS, *PASS, *CREATE_SERVICE_LINKED}
GRANTING = (*BOUNDED, *ATTACH)  # what gives a role permissions: the boundary is required for each
GUARD_WRITES = (
    "iam:CreatePolicy",
    "iam:CreatePolicyVersion",
    "iam:DeletePolicy",
    "iam:DeletePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:TagPolicy",
    "iam:UntagPolicy",
)


def boundary_arn(partition: str, account: str) -> str:
    return f"arn:{partition}:iam::{account}:policy/{STACK_ROLE_BOUNDARY}"


def stack_roles(partition: str, account: str) -> list[str]:
    """Every role under the project's path (`role/mangaassist/<env>/<name>`): the name may be cut, the path never."""
    return [f"arn:{partition}:iam::{account}:role{ROLE_PATH_ROOT}*"]


def stack_policies(partition: str, account: str) -> list[str]:
    return [f"arn:{partition}:iam::{account}:policy/{PROJECT}-*-{name}" for name in STACK_POLICIES]


def service_linked_role(partition: str, account: str) -> str:
    return f"arn:{partition}:iam::{account}:role/aws-service-role/{SERVICE_LINKED}/*"


def iam_statements(actions: list[str], partition: str, account: str) -> list[dict]:
    """The Allow statements for the IAM actions the handlers declare, then the Deny statements."""
    unknown = set(actions) - KNOWN
    if unknown:
        raise ValueError(f"IAM actions without a rule in constructs/execution_policy_iam.py: {sorted(unknown)}")
    roles, boundary = stack_roles(partition, account), boundary_arn(partition, account)
    with_boundary = {"ArnEquals": {"iam:PermissionsBoundary": boundary}}
    ours = {"ArnLike": {"iam:PolicyARN": stack_policies(partition, account)}}
    allows = [
        ("IamRolesWithTheBoundary", BOUNDED, roles, with_boundary),
        ("IamAttachOurPoliciesToBoundedRoles", ATTACH, roles, {**with_boundary, **ours}),
        ("IamRolesOfTheStacks", ROLE_PLAIN, roles, None),
        ("IamPoliciesOfTheStacks", POLICY_ACTIONS, stack_policies(partition, account), None),
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
        _statement(
            "DenyAttachingOtherPolicies",
            "Deny",
            list(ATTACH),
            ["*"],
            {"ArnNotLike": {"iam:PolicyARN": stack_policies(partition, account)}},
        ),
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
    ]


def _statement(sid: str, effect: str, actions: list[str], resources: list[str], condition: dict | None = None) -> dict:
    statement = {"Sid": sid, "Effect": effect, "Action": actions, "Resource": resources}
    return {**statement, "Condition": condition} if condition else statement
