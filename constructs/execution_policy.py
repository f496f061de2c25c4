"""The CloudFormation execution policy `make bootstrap` gives CDK's bootstrap stack instead of
AdministratorAccess (`cdk bootstrap --cloudformation-execution-policies`: AWS CDK v2 Developer Guide,
"Customize CDK bootstrapping").

For each resource type the stacks create (`RESOURCE_TYPES`, nothing else) it holds the permissions
CloudFormation's handlers declare in the registry schema (`handlers.*.permissions`, cfn-lint's copy).
Types without handler permissions (`EXPLICIT`) and declared permissions these stacks never exercise
(`NOT_NEEDED`) are listed with their reason; tests/stacks/test_execution_policy.py proves every resource
type of every template is covered and no other.

IAM is constructs/execution_policy_iam.py's (issue 38). Lambda is limited to `MangaAssist-*` functions
(CloudFormation's generated names start with the stack name; observed, not documented). Every other
statement is on `*`, for the reason in `WIDE_REASON`.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from config.access import EXECUTION_POLICY
from config.naming import PROJECT
from constructs.execution_policy_iam import iam_statements

POLICY_NAME = EXECUTION_POLICY  # one per account: `-1`, `-2`, … for each part
# IAM's limit for a managed policy document, whitespace not counted (IAM User Guide, "IAM and AWS STS quotas").
MAX_POLICY_CHARS = 6144
SCHEMA_REGION = "us-east-1"  # the registry schema of the region CloudFormation publishes first

# The resource types the image and serving stacks create: these and no others.
RESOURCE_TYPES = (
    "AWS::ApplicationAutoScaling::ScalableTarget",
    "AWS::ApplicationAutoScaling::ScalingPolicy",
    "AWS::Budgets::Budget",
    "AWS::CloudWatch::Alarm",
    "AWS::CloudWatch::Dashboard",
    "AWS::CodeBuild::Project",
    "AWS::ECR::Repository",
    "AWS::Events::Rule",
    "AWS::IAM::Policy",
    "AWS::IAM::Role",
    "AWS::KMS::Key",
    "AWS::Lambda::Function",
    "AWS::Lambda::Permission",
    "AWS::Logs::LogGroup",
    "AWS::S3::Bucket",
    "AWS::S3::BucketPolicy",
    "AWS::SNS::Subscription",
    "AWS::SNS::Topic",
    "AWS::SNS::TopicPolicy",
    "AWS::SageMaker::Endpoint",
    "AWS::SageMaker::EndpointConfig",
    "AWS::SageMaker::Model",
    "AWS::StepFunctions::StateMachine",
    "Custom::ServingImageBuild",
)

# Types the registry schema gives no handler permissions for: the actions from the Service
# Authorization Reference for what CloudFormation does with them.
EXPLICIT: dict[str, list[str]] = {
    # A legacy (non-registry) type: create, update, delete, read the project; pass its service role.
    "AWS::CodeBuild::Project": [
        "codebuild:CreateProject",
        "codebuild:UpdateProject",
        "codebuild:DeleteProject",
        "codebuild:BatchGetProjects",
        "iam:PassRole",
    ],
    # A custom resource: CloudFormation invokes its provider's Lambda function with the execution role
    # (CloudFormation User Guide, "Custom resources"; "Service role").
    "Custom::ServingImageBuild": ["lambda:InvokeFunction"],
}

# Handler permissions that are API operation names, not IAM actions: the action AWS authorises each as
# ("you must have permission to perform the s3:… action": S3 API reference, the same text in botocore's
# model; PutObjectLockConfiguration: the Service Authorization Reference's s3:PutBucketObjectLockConfiguration).
NOT_IAM_ACTIONS: dict[str, str | None] = {
    "s3:DeleteBucketAnalyticsConfiguration": "s3:PutAnalyticsConfiguration",
    "s3:DeleteBucketCors": "s3:PutBucketCORS",
    "s3:DeleteBucketEncryption": "s3:PutEncryptionConfiguration",
    "s3:DeleteBucketLifecycle": "s3:PutLifecycleConfiguration",
    "s3:DeleteBucketMetricsConfiguration": "s3:PutMetricsConfiguration",
    "s3:DeleteBucketReplication": "s3:PutReplicationConfiguration",
    "s3:PutBucketReplication": "s3:PutReplicationConfiguration",
    "s3:PutObjectLockConfiguration": "s3:PutBucketObjectLockConfiguration",
    "s3:REST.PUT.OBJECT": None,  # the AWS::Logs::LogGroup schema lists an S3 REST operation; nothing to grant
}

# Permissions a handler declares for features these stacks do not use; each with why.
NOT_NEEDED: dict[str, str] = {
    "ec2:DescribeNetworkInterfaces": "Lambda functions in a VPC only; ours have no VpcConfig",
    "ec2:DescribeSecurityGroups": "Lambda functions in a VPC only",
    "ec2:DescribeSubnets": "Lambda functions in a VPC only",
    "ec2:DescribeVpcs": "Lambda functions in a VPC only",
    "elasticfilesystem:DescribeMountTargets": "Lambda functions with an EFS file system only",
    "s3files:ListMountTargets": "Lambda functions with an S3 file system only",
    "lambda:PassCapacityProvider": "Lambda functions on a capacity provider only",
    "firehose:TagDeliveryStream": "log groups delivering to Firehose only",
    "iam:DeleteRolePermissionsBoundary": "a stack role never loses its boundary (issue 38; denied outright)",
    # Issue 51: the stacks create no managed policy (the people's are the access stack's) and attach none.
    "iam:AttachRolePolicy": "no stack role has a managed policy; a deploy attaches none (issue 51; denied outright)",
    # A stack role's trust is a service principal fixed in code; a deploy that could rewrite it could make a
    # role trust the deployer (issue 51). A changed trust is a new role (a new logical ID), not an update.
    "iam:UpdateAssumeRolePolicy": "a stack role's trust never changes in place (issue 51; denied outright)",
    "iam:PutGroupPolicy": "our inline policies attach to roles only",
    "iam:GetGroupPolicy": "our inline policies attach to roles only",
    "iam:DeleteGroupPolicy": "our inline policies attach to roles only",
    "iam:PutUserPolicy": "our inline policies attach to roles only",
    "iam:GetUserPolicy": "our inline policies attach to roles only",
    "iam:DeleteUserPolicy": "our inline policies attach to roles only",
    "s3:CreateBucketMetadataTableConfiguration": "S3 Metadata tables only; the buckets have none",
    "s3:DeleteBucketMetadataTableConfiguration": "S3 Metadata tables only",
    "s3:GetBucketMetadataTableConfiguration": "S3 Metadata tables only",
    "s3:UpdateBucketMetadataAnnotationTableConfiguration": "S3 Metadata tables only",
    "s3:UpdateBucketMetadataInventoryTableConfiguration": "S3 Metadata tables only",
    "s3:UpdateBucketMetadataJournalTableConfiguration": "S3 Metadata tables only",
    "lambda:DeleteProvisionedConcurrencyConfig": "scalable targets of Lambda only; ours scale SageMaker variants",
    "lambda:GetProvisionedConcurrencyConfig": "scalable targets of Lambda only",
    "lambda:PutProvisionedConcurrencyConfig": "scalable targets of Lambda only",
}
NOT_NEEDED_PREFIXES = {"s3tables:": "S3 Metadata tables only; the buckets have none"}

WIDE_REASON = (
    "CloudFormation names these resources itself (stack name, logical ID, a random suffix) or the service "
    "assigns their IDs, so no ARN is known before they exist; the role is assumable only by CloudFormation "
    "(the bootstrap template's trust policy), for the stacks CDK's deploy role submits"
)


@cache
def registry_schema(resource_type: str) -> dict:
    """The resource type's CloudFormation registry schema (cfn-lint's copy)."""
    import cfnlint  # the dev toolchain's: only `make bootstrap` and the tests read it

    base = Path(cfnlint.__file__).parent / "data" / "schemas"
    index = json.loads((base / "providers" / f"{SCHEMA_REGION}.json").read_text())
    return json.loads((base / "resources" / f"{index[resource_type]}.json").read_text())


def handler_permissions(resource_type: str) -> set[str]:
    """What CloudFormation's handlers for the type declare they call (create, update, delete, read)."""
    if resource_type in EXPLICIT:
        return set(EXPLICIT[resource_type])
    handlers = registry_schema(resource_type).get("handlers", {})
    return {p for h in ("create", "update", "delete", "read") for p in handlers.get(h, {}).get("permissions", [])}


def needed(action: str) -> bool:
    return action not in NOT_NEEDED and not action.startswith(tuple(NOT_NEEDED_PREFIXES))


def as_iam_action(permission: str) -> str | None:
    return NOT_IAM_ACTIONS.get(permission, permission)


def execution_actions() -> list[str]:
    declared = {as_iam_action(a) for t in RESOURCE_TYPES for a in handler_permissions(t) if needed(a)}
    return sorted(a for a in declared if a is not None)


def execution_statements(partition: str, account: str) -> list[dict]:
    """IAM JSON: one statement per service (IAM: constructs/execution_policy_iam.py); Lambda scoped, the rest on `*`."""
    by_service: dict[str, list[str]] = {}
    for action in execution_actions():
        by_service.setdefault(action.split(":")[0], []).append(action)
    lambdas = [f"arn:{partition}:lambda:*:{account}:function:{PROJECT}-*"]
    statements = []
    for service, actions in sorted(by_service.items()):
        if service == "iam":
            statements += iam_statements(actions, partition, account)
            continue
        sid = "".join(part.capitalize() for part in service.split("-"))
        resources = lambdas if service == "lambda" else "*"
        statements.append({"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources})
    return statements


def execution_documents(partition: str, account: str) -> list[dict]:
    """The statements in as few policy documents as IAM's size limit allows, each a managed policy."""
    documents: list[list[dict]] = [[]]
    for statement in execution_statements(partition, account):
        if _size(documents[-1] + [statement]) > MAX_POLICY_CHARS:
            documents.append([])
        documents[-1].append(statement)
    return [{"Version": "2012-10-17", "Statement": statements} for statements in documents]


def _size(statements: list[dict]) -> int:
    return len(json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":")))


def policy_names(count: int) -> list[str]:
    return [f"{POLICY_NAME}-{n}" for n in range(1, count + 1)]
