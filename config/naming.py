"""Names shared by the CDK app and the operations CLI: stacks and their outputs, environment files."""

from __future__ import annotations

PROJECT = "MangaAssist"


def environment_label(env_name: str) -> str:
    """An environment's file as messages and docs name it, relative to the repository
    (config.loader.environment_file is the path on disk)."""
    return f"config/environments/{env_name}.yaml"


def image_stack_name(env_name: str) -> str:
    return f"{PROJECT}-{env_name}-Image"


def ci_access_stack_name(env_name: str) -> str:
    """The optional stack of the pipeline's deploy role (stacks/ci_access_stack.py; config `ci:`)."""
    return f"{PROJECT}-{env_name}-CiAccess"


def serving_stack_name(env_name: str) -> str:
    return f"{PROJECT}-{env_name}-Serving"


def floor_record_path(env_name: str) -> str:
    """The SSM Parameter Store path under which `bin/ops rollback` keeps one floor record per variant
    (ops/operations/floor_store.py); the Operator policy grants exactly this path."""
    return f"/{PROJECT.lower()}/{env_name}/rollback-floor"


# The serving stack's parameter that carries ACCEPT_ASSUMED_CAPACITY's reason to its rule (constructs/deploy_guards.py).
PARAMETER_ACCEPT_ASSUMED_CAPACITY = "AcceptAssumedCapacity"

# CloudFormation output keys (the ops CLI reads them with DescribeStacks).
OUTPUT_REPOSITORY_URI = "RepositoryUri"
OUTPUT_REPOSITORY_NAME = "RepositoryName"
OUTPUT_BUILD_PROJECT = "ImageBuildProject"
OUTPUT_SOURCE_IMAGE_TAG = "SourceImageTag"  # the tag the last deploy built from container/
OUTPUT_ENDPOINT_NAME = "EndpointName"
OUTPUT_ENDPOINT_CONFIG_NAME = "EndpointConfigName"
OUTPUT_VARIANT_NAMES = "VariantNames"  # comma-separated
OUTPUT_ROLLBACK_ALARMS = "RollbackAlarmNames"  # comma-separated
OUTPUT_DASHBOARD_NAME = "DashboardName"
OUTPUT_MONTHLY_COST = "MonthlyCostUsd"  # "floor-ceiling", on demand
OUTPUT_ALARM_TOPIC_ARN = "AlarmTopicArn"  # the paging topic (the one topic before issue 27)
OUTPUT_TICKET_TOPIC_ARN = "TicketTopicArn"
OUTPUT_MONTHLY_BUDGET = "MonthlyBudgetUsd"  # the AWS Budgets limit (configured plan cost x budget_margin)
OUTPUT_OPERATOR_POLICY_ARN = "OperatorPolicyArn"  # the access stack's, as the other people's policies and roles
# The serving stack's capture bucket and key, exported for the access stack's reader policy (issue 51).
OUTPUT_CAPTURE_BUCKET_ARN = "CaptureBucketArn"
OUTPUT_CAPTURE_KEY_ARN = "CaptureKeyArn"


def export_name(stack_name: str, output: str) -> str:
    """A stack output's CloudFormation export, named so that another stack can import it (and cdk-nag print it)."""
    return f"{stack_name}:{output}"


# Image tags. `image_tag: source` in a variant means "container/ as it is now": synth resolves it to
# the build tag SOURCE_TAG_PREFIX + hash of the source, which the image stack builds during deploy.
SOURCE_IMAGE_TAG = "source"
SOURCE_TAG_PREFIX = "src-"
# Release tags (e.g. v0.2.0, given to a tested build's image) never expire (ECR lifecycle policy).
RELEASE_TAG_PATTERN = "v*"
