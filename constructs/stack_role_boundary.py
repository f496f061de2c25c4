"""`MangaAssistGuard-StackRoleBoundary`: the permissions boundary of every role the image and serving
stacks create (issue 38).

A role's effective permissions are what both its identity policies and its boundary allow (IAM User
Guide, "Permissions boundaries for IAM entities"), so whatever policy a template gives one of these
roles, it can do no more than this: the actions the project's roles are granted today
(`ROLE_ACTIONS`, the Operator's and the CaptureReader's) and never IAM or KMS administration (an
explicit Deny, which no Allow in any policy overrides: IAM User Guide, "Policy evaluation logic").

The boundary is not in any stack: `make bootstrap` creates it (ops/pipeline/execution_policy.py) with an
administrator's credentials, and the execution policy lets CloudFormation create or change a role only
with this boundary (constructs/execution_policy.py, `iam:PermissionsBoundary`). The stacks reference it
by name: CDK's `PermissionsBoundary.of(scope).apply(policy)` sets it on every `AWS::IAM::Role` and
`AWS::IAM::User` in the scope (aws-cdk-lib aws_iam.PermissionsBoundary: "Apply the given policy as
Permissions Boundary to all Roles and Users in the scope").

Not `cdk bootstrap --custom-permissions-boundary`: that option attaches the boundary to the bootstrap's
CloudFormationExecutionRole itself (AWS CDK v2 Developer Guide, "Create and apply permissions boundaries
for the AWS CDK", "Apply the permissions boundary during bootstrapping"), not to the roles the stacks
create; the execution role is held in by its own policy's conditions and Deny statements instead
(constructs/execution_policy_iam.py).
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam

from config.access import STACK_ROLE_BOUNDARY
from constructs import Construct
from constructs.capture_reader_policy import capture_reader_statements
from constructs.operator_policy import OperatorScope, operator_statements

# What the stacks' roles' own policies grant (CDK grants and ours), as the synthesised templates write
# it; tests/stacks/test_stack_role_boundary.py fails when a role is granted an action not in here.
ROLE_ACTIONS = (
    "application-autoscaling:DescribeScalableTargets",
    "application-autoscaling:DescribeScalingActivities",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:PutMetricData",
    "codebuild:BatchGetBuilds",
    "codebuild:BatchPutCodeCoverages",
    "codebuild:BatchPutTestCases",
    "codebuild:CreateReport",
    "codebuild:CreateReportGroup",
    "codebuild:StartBuild",
    "codebuild:StopBuild",
    "codebuild:UpdateReport",
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:CompleteLayerUpload",
    "ecr:DescribeImages",
    "ecr:GetAuthorizationToken",
    "ecr:GetDownloadUrlForLayer",
    "ecr:InitiateLayerUpload",
    "ecr:PutImage",
    "ecr:UploadLayerPart",
    "kms:Decrypt",
    "kms:Encrypt",
    "kms:GenerateDataKey",
    "kms:GenerateDataKey*",
    "kms:ReEncrypt*",
    "lambda:GetFunction",
    "lambda:InvokeFunction",
    "logs:CreateLogGroup",
    "logs:CreateLogStream",
    "logs:DescribeLogStreams",
    "logs:PutLogEvents",
    "s3:AbortMultipartUpload",
    "s3:GetBucket*",
    "s3:GetObject",
    "s3:GetObject*",
    "s3:List*",
    "s3:ListBucket",
    "s3:PutObject",
    "sagemaker:DescribeEndpoint",
    "states:StartExecution",
)
# Never, whatever a role's policies say: IAM (roles, policies, boundaries, pass-role, users, keys) and
# the administration of KMS keys (the key administrators' actions of the AWS KMS Developer Guide, "Default
# key policy", with CreateGrant, which could hand Decrypt to anyone). Reading and using keys is not here.
DENIED_ACTIONS = (
    "iam:*",
    "kms:CancelKeyDeletion",
    "kms:Create*",
    "kms:Delete*",
    "kms:Disable*",
    "kms:Enable*",
    "kms:ImportKeyMaterial",
    "kms:Put*",
    "kms:ReplicateKey",
    "kms:RetireGrant",
    "kms:Revoke*",
    "kms:RotateKeyOnDemand",
    "kms:ScheduleKeyDeletion",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:Update*",
)
ALLOW_REASON = (
    "a permissions boundary caps actions, it grants nothing: each role's own policy names its resources; "
    "the boundary keeps every stack role to the actions the project's roles use and away from IAM and KMS "
    "administration"
)


def _granted_by_access_policies() -> set[str]:
    """The Operator's and the CaptureReader's actions (the CaptureReader role holds both policies)."""
    scope = OperatorScope("env", "aws", "region", "account", "endpoint", "repository", ("topic",))
    statements = operator_statements(scope) + capture_reader_statements("bucket", "key", "region")
    return {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


def boundary_actions() -> list[str]:
    return sorted(set(ROLE_ACTIONS) | _granted_by_access_policies())


def boundary_document() -> dict:
    """The boundary, IAM JSON (account-independent: it names no resource)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "WhatTheProjectsRolesUse", "Effect": "Allow", "Action": boundary_actions(), "Resource": "*"},
            {"Sid": "NoIamOrKmsAdministration", "Effect": "Deny", "Action": list(DENIED_ACTIONS), "Resource": "*"},
        ],
    }


def apply_stack_role_boundary(scope: Construct) -> iam.IManagedPolicy:
    """Every role and user created in `scope` gets the boundary (by name: it exists before any deploy)."""
    boundary = iam.ManagedPolicy.from_managed_policy_name(scope, "StackRoleBoundary", STACK_ROLE_BOUNDARY)
    iam.PermissionsBoundary.of(scope).apply(boundary)
    return boundary
