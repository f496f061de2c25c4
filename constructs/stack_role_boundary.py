"""`MangaAssistGuard-StackRoleBoundary`: the permissions boundary of every role the image and serving
stacks create, and of the break-glass capture reader (issues 38, 51).

A role's effective permissions are what both its identity policies and its boundary allow (IAM User
Guide, "Permissions boundaries for IAM entities"). A deploy may give a bounded role any inline policy and
any trust, so the boundary itself must keep every role to the project's own resources (issue 51): it allows
the actions the project's roles are granted (`ROLE_ACTIONS`) only on what the project owns, and never IAM or
KMS administration (an explicit Deny, which no Allow in any policy overrides: "Policy evaluation logic").

How each resource is told apart (ARN formats and condition keys: the Service Authorization Reference,
parliament's copy, which tests/constructs/test_iam_lint.py checks the statements against):
- S3: buckets and objects whose bucket name starts `mangaassist-` (CloudFormation names a bucket
  `<stack name>-<logical id>-<suffix>` in lower case, observed; the model data buckets are named so by
  convention, config.checks.capture refuses another); reads of CDK's asset bucket (`cdk-<qualifier>-assets-
  <account>-<region>`), where the image build fetches its source: the bootstrap's, shared by every CDK app
  in the account, read-only.
- KMS keys, CodeBuild projects, state machines and ECR repositories: CloudFormation generates their names
  and IDs, so by the project's tag (`aws:ResourceTag/MangaAssistProject`, which stacks/environment.py puts
  on every resource of both stacks; the boundary denies kms:TagResource, and grants no other TagResource).
- Lambda functions: `function:MangaAssist-*` (CloudFormation's generated name starts with the stack name,
  as the execution policy relies on too).
- No resource, or read-only on metadata (`NO_RESOURCE`): each with its reason.
What CDK's own custom resources need, and why it is here: the image stack's `Custom::ServingImageBuild`
runs on aws-cdk-lib's custom resource provider framework (`custom_resources.Provider` with an isComplete
handler), whose onEvent function invokes our start and poll functions (`lambda:InvokeFunction`,
`lambda:GetFunction` on `MangaAssist-*`) and starts its waiter state machine (`states:StartExecution`, the
state machine tagged as the project's), whose role invokes the isComplete and onTimeout functions; every
function writes its own log group; the build project's role reads its source from CDK's asset bucket
and pushes to the tagged repository. tests/constructs/test_stack_role_boundary.py checks each grant of the
synthesised templates against the boundary on its resource.
The actions the Operator policy grants (endpoint weights, scaling, `ssm:PutParameter`, `ecr:PutImage` by a
person) are no stack role's since the break-glass reader stopped wearing it (issue 51), so they are not here.

The boundary is not in any stack: `make bootstrap` creates it (ops/pipeline/execution_policy.py) with an
administrator's credentials, once per account, and the execution policy lets CloudFormation create or
change a role only with this boundary (constructs/execution_policy.py, `iam:PermissionsBoundary`). The
stacks reference it by name: CDK's `PermissionsBoundary.of(scope).apply(policy)` sets it on every
`AWS::IAM::Role` and `AWS::IAM::User` in the scope.

Not `cdk bootstrap --custom-permissions-boundary`: that option attaches the boundary to the bootstrap's
CloudFormationExecutionRole itself (AWS CDK v2 Developer Guide, "Create and apply permissions boundaries
for the AWS CDK"), not to the roles the stacks create; the execution role is held in by its own policy's
conditions and Deny statements instead (constructs/execution_policy_iam.py).
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
ALLOW_REASON = (
    "a permissions boundary caps actions, it grants nothing: each role's own policy names its resources; "
    "the boundary keeps every stack role to the project's buckets, keys, builds, functions and repositories "
    "and away from IAM and KMS administration (constructs/stack_role_boundary.py)"
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
