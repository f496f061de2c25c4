"""`MangaAssistGuard-StackRoleBoundary`: the permissions boundary of every role the image and serving
stacks create, and of the break-glass capture reader (issues 38, 51).

Effective permissions are what both the identity policies and the boundary allow (IAM User Guide,
"Permissions boundaries for IAM entities"). A deploy may give a bounded role any inline policy and trust,
so the boundary keeps every role to the project's own resources: the actions the roles are granted only on
what the project owns, and an explicit Deny of IAM and KMS administration ("Policy evaluation logic").

Resources (ARN formats and condition keys: the Service Authorization Reference, parliament's copy, checked
by tests/constructs/test_iam_lint.py):
- S3: buckets named `mangaassist-*` (CloudFormation's generated names start with the stack name; model data
  buckets by convention, config.checks.capture), and read-only CDK's asset bucket (the image build's source).
- KMS keys, CodeBuild projects, state machines, ECR repositories: by the project tag
  (`aws:ResourceTag/MangaAssistProject`, stacks/environment.py; the boundary denies kms:TagResource).
- Lambda functions: `function:MangaAssist-*`.
- No resource or metadata reads (`NO_RESOURCE`): each with its reason.
CDK's `Custom::ServingImageBuild` provider framework invokes our functions, starts its waiter state
machine and writes logs; the build reads the asset bucket and pushes to the tagged repository.
tests/constructs/test_stack_role_boundary.py checks every grant of the templates against the boundary. The
Operator policy's actions are no stack role's since the reader stopped wearing it (issue 51).

`make bootstrap` creates the boundary (ops/pipeline/execution_policy.py), and the execution policy lets
CloudFormation create or change a role only with it (`iam:PermissionsBoundary`); the stacks apply it by name
(`PermissionsBoundary.of(scope).apply`). Not `cdk bootstrap --custom-permissions-boundary`, which bounds the
execution role itself, not the stacks' roles (AWS CDK v2 Developer Guide, "Create and apply permissions
boundaries for the AWS CDK"); that role is held in by constructs/execution_policy_iam.py.
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam

from config.access import PROJECT_TAG_KEY, PROJECT_TAG_VALUE, STACK_ROLE_BOUNDARY
from config.naming import PROJECT
from constructs import Construct
from constructs.deployer_policy import CDK_QUALIFIER

# Each group of actions the stacks' roles are granted (CDK grants and ours, as the synthesised templates
# write them), by the resource it acts on; tests/constructs/test_stack_role_boundary.py fails when a role is
# granted an action none of them holds, or when one of them holds an action no role is granted.
BUCKETS = ("s3:GetBucket*", "s3:List*", "s3:ListBucket")
OBJECTS = ("s3:AbortMultipartUpload", "s3:GetObject", "s3:GetObject*", "s3:PutObject")
ASSET_OBJECTS = ("s3:GetObject*",)  # the image build's source, from CDK's asset bucket
KEYS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKey*", "kms:ReEncrypt*")
# CDK also grants a project's role its report groups; the buildspec declares none, so they are not here.
BUILDS = ("codebuild:BatchGetBuilds", "codebuild:StartBuild", "codebuild:StopBuild")
STATE_MACHINES = ("states:StartExecution",)
REPOSITORIES = (
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:CompleteLayerUpload",
    "ecr:DescribeImages",
    "ecr:GetDownloadUrlForLayer",
    "ecr:InitiateLayerUpload",
    "ecr:PutImage",
    "ecr:UploadLayerPart",
)
FUNCTIONS = ("lambda:GetFunction", "lambda:InvokeFunction")
# On `*`: actions that take no resource, reads of metadata, and log writing; why, each.
NO_RESOURCE = {
    "application-autoscaling:DescribeScalableTargets": "Describe* take no resource (Service Authorization Reference)",
    "application-autoscaling:DescribeScalingActivities": "Describe* take no resource",
    "application-autoscaling:DescribeScalingPolicies": "Describe* take no resource",
    "cloudwatch:PutMetricData": "takes no resource; each role's policy names its namespace (cloudwatch:namespace)",
    "ecr:GetAuthorizationToken": "takes no resource; pulls and pushes need the repository statement",
    "cloudwatch:DescribeAlarms": "reads alarm state and configuration, no data",
    "sagemaker:DescribeEndpoint": "reads an endpoint's configuration, no data, changes nothing",
    "logs:CreateLogGroup": "writes log lines, reads none (no GetLogEvents or FilterLogEvents here)",
    "logs:CreateLogStream": "writes log lines, reads none",
    "logs:DescribeLogStreams": "lists stream names and sizes, no log events",
    "logs:PutLogEvents": "writes log lines, reads none",
}
ROLE_ACTIONS = tuple(
    sorted({*BUCKETS, *OBJECTS, *KEYS, *BUILDS, *STATE_MACHINES, *REPOSITORIES, *FUNCTIONS, *NO_RESOURCE})
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


def boundary_statements(partition: str, account: str) -> list[dict]:
    """The Allow statements, one per kind of resource, scoped to the project's; then the Deny."""

    def arn(service: str, resource: str) -> str:
        return f"arn:{partition}:{service}:*:{account}:{resource}"

    tagged = {"StringEquals": {f"aws:ResourceTag/{PROJECT_TAG_KEY}": PROJECT_TAG_VALUE}}
    buckets = f"arn:{partition}:s3:::{PROJECT.lower()}-*"
    assets = f"arn:{partition}:s3:::cdk-{CDK_QUALIFIER}-assets-{account}-*"
    return [
        _allow("ProjectBuckets", BUCKETS, [buckets, assets]),
        _allow("ProjectObjects", OBJECTS, [f"{buckets}/*"]),
        _allow("CdkAssetObjects", ASSET_OBJECTS, [f"{assets}/*"]),
        _allow("ProjectKeys", KEYS, [arn("kms", "key/*")], tagged),
        _allow("ProjectBuilds", BUILDS, [arn("codebuild", "project/*")], tagged),
        _allow("ProjectStateMachines", STATE_MACHINES, [arn("states", "stateMachine:*")], tagged),
        _allow("ProjectRepositories", REPOSITORIES, [arn("ecr", "repository/*")], tagged),
        _allow("ProjectFunctions", FUNCTIONS, [arn("lambda", f"function:{PROJECT}-*")]),
        _allow("NoResourceOrMetadata", tuple(sorted(NO_RESOURCE)), ["*"]),
        {"Sid": "NoIamOrKmsAdministration", "Effect": "Deny", "Action": list(DENIED_ACTIONS), "Resource": "*"},
    ]


def _allow(sid: str, actions: tuple[str, ...], resources: list[str], condition: dict | None = None) -> dict:
    statement = {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": resources}
    return {**statement, "Condition": condition} if condition else statement


def boundary_document(partition: str, account: str) -> dict:
    """The boundary, IAM JSON, for one account (every environment deploying there)."""
    return {"Version": "2012-10-17", "Statement": boundary_statements(partition, account)}


def apply_stack_role_boundary(scope: Construct) -> iam.IManagedPolicy:
    """Every role and user created in `scope` gets the boundary (by name: it exists before any deploy)."""
    boundary = iam.ManagedPolicy.from_managed_policy_name(scope, "StackRoleBoundary", STACK_ROLE_BOUNDARY)
    iam.PermissionsBoundary.of(scope).apply(boundary)
    return boundary
