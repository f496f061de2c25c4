"""Proof that each ops command is allowed by the policies docs/operations.md says it needs, and by no
more: every AWS call a command makes in a test is turned into the IAM action(s), resource ARN and
condition keys AWS authorises it with, and evaluated against the statements of exactly those policies
(ops/operations/permissions.py: `Operator`, `Deployer`, `CaptureReader`), built by the functions the stack uses.

Where the mapping comes from, not memory:
- Action: an entry of `EXCEPTIONS` (each cited; tests/ops/test_operator_policy_proof.py checks each one
  against botocore's model), else the sentence in the operation's documentation in botocore's model
  ("your IAM permissions must allow the <code>x:Y</code> action", "you must have permission to perform
  the <code>x:Y</code> action"; "No permissions are required"), else `prefix:OperationName` when the
  Service Authorization Reference has that action, the prefix being the model's service name or its
  signing name (sagemaker-runtime signs as sagemaker).
- Resource ARN: the Service Authorization Reference's ARN format for each resource type the action
  lists and the call names (a required one, marked `*`, must be named; none: `*`), its placeholders
  filled from the call (`PLACEHOLDERS`).
- Dependent actions: the reference's, each on its own resources with the same context, except where
  the API reference needs one only for some requests (`DEPENDS_WHEN`, cited).
The Service Authorization Reference is read from the copy parliament (requirements-dev.txt) ships,
iam_definition.json, as of parliament's release: an action AWS added later is unknown to it.

Conditions are evaluated here, not by moto: moto's policy engine skips a condition whose key is absent
from the request (moto/iam/access_control.py), where AWS fails StringEquals; and moto authorises every
service but S3 against resource `*`. The evaluator knows Allow/Deny, Action, Resource and the
StringEquals, StringLike, their Arn forms, their negations, Bool and Null operators; a statement using anything
else fails the proof.

Calls are recorded from every session whose account the CLI checks (ops.operations.environment.check_account:
`connect` and `open_for_emergency` both do), with the `bin/ops` command running at the time; the
scalable targets' tags, which moto does not keep, are followed by `ScalableTargetTags`. Used as an
autouse fixture by tests/ops and tests/capacity: every CLI scenario of the suite is checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import parliament
import pytest
from botocore.exceptions import ClientError
from typer._click.globals import get_current_context  # typer vendors click: the running command's context

import ops.operations.environment
from config import EnvironmentConfig
from config.access import CAPTURE_READER, DEPLOYER, OPERATOR, scaling_tags
from config.endpoint_identity import EndpointIdentity, load_identity
from config.naming import serving_stack_name
from constructs.capture_reader_policy import capture_reader_statements
from constructs.deployer_policy import DeployerScope, deployer_statements, model_data_buckets
from constructs.operator_policy import OperatorScope, operator_statements
from ops.operations.aws import AwsClients
from ops.operations.environment import load_environment_config
from ops.operations.permissions import policies_for

MOTO_ACCOUNT = "123456789012"
WORLD_REPOSITORY = "mangaassist-llm"  # tests/ops_world.py's worlds push their images there
STACK_ID = "00000000-0000-0000-0000-000000000000"
NEW_TARGET = "scalable-target/not-yet-registered"  # the ARN of a target a RegisterScalableTarget creates

# (botocore service, operation) -> IAM action, or None for "no permission needed"; each from AWS's text.
EXCEPTIONS: dict[tuple[str, str], str | None] = {
    # SageMaker API reference, InvokeEndpointWithResponseStream: "Before you can use this operation, your
    # IAM permissions must allow the sagemaker:InvokeEndpoint action." The Service Authorization
    # Reference also lists sagemaker:InvokeEndpointWithResponseStream; the API reference is what is called.
    ("sagemaker-runtime", "InvokeEndpointWithResponseStream"): "sagemaker:InvokeEndpoint",
    # S3 API reference, ListObjectsV2: "You must have permission to perform the s3:ListBucket action."
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    # STS API reference, GetCallerIdentity: "No permissions are required to perform this operation."
    ("sts", "GetCallerIdentity"): None,
    # S3 API reference, GetBucketEncryption: "The s3:GetEncryptionConfiguration permission is required in a policy."
    ("s3", "GetBucketEncryption"): "s3:GetEncryptionConfiguration",
}
# Dependent actions the reference lists that AWS's API reference needs only for some requests.
# The reference's dependent actions of servicequotas:List*ServiceQuotas are the limits APIs of the services
# whose quotas Service Quotas reads from them (autoscaling:DescribeAccountLimits: "Describes the current Amazon
# EC2 Auto Scaling resource quotas for your account", and the like): needed for that service's ServiceCode only.
QUOTA_SOURCES = {
    "autoscaling:DescribeAccountLimits": "autoscaling",
    "cloudformation:DescribeAccountLimits": "cloudformation",
    "dynamodb:DescribeLimits": "dynamodb",
    "elasticloadbalancing:DescribeAccountLimits": "elasticloadbalancing",
    "iam:GetAccountSummary": "iam",
    "kinesis:DescribeLimits": "kinesis",
    "rds:DescribeAccountAttributes": "rds",
    "route53:GetAccountLimit": "route53",
}
DEPENDS_WHEN: dict[tuple[str, str], Callable[[Call], bool]] = {
    **{
        (listing, source): lambda call, code=code: call.params.get("ServiceCode") == code
        for listing in ("servicequotas:ListServiceQuotas", "servicequotas:ListAWSDefaultServiceQuotas")
        for source, code in QUOTA_SOURCES.items()
    },
    # CloudFormation API reference, DescribeStacks, StackName: "If you don't pass a parameter to StackName,
    # … This requires ListStacks and DescribeStacks permissions."
    ("cloudformation:DescribeStacks", "cloudformation:ListStacks"): lambda call: "StackName" not in call.params,
}
DOCUMENTED_ACTION = (
    re.compile(r"IAM permissions must allow the\s*<code>([a-z0-9-]+:[A-Za-z0-9]+)</code>\s*action"),
    re.compile(r"You must have permission to perform the\s*<code>([a-z0-9-]+:[A-Za-z0-9]+)</code>\s*action"),
)
NO_PERMISSION = "No permissions are required to perform this operation"


@dataclass
class Call:
    cfg: EnvironmentConfig | EndpointIdentity  # what the calls need of it: name, endpoint_name, account
    session: boto3.Session
    service: str
    operation: str
    params: dict[str, Any]
    policies: tuple[str, ...] = (OPERATOR,)  # what the running command needs (ops/operations/permissions.py)
    command: str = ""
    repository: str = ""  # ECR calls: the repository the endpoint's images come from
    target_arn: str = ""  # Application Auto Scaling calls: the scalable target's ARN (NEW_TARGET if none)
    target_tags: dict[str, str] = field(default_factory=dict)  # … and its tags before the call
    capture_bucket: str | None = None  # S3 calls: the bucket the endpoint captures into
    bucket_key: str = ""  # S3 calls: the bucket's default KMS key ARN, if any
    topics: tuple[str, ...] = ()  # SNS calls: the topics the serving stack outputs

    @property
    def region(self) -> str:
        return self.session.region_name

    @property
    def account(self) -> str:
        return self.cfg.account or MOTO_ACCOUNT


# ---- the Service Authorization Reference and botocore's model -------------------------------------


@cache
def authorization_reference() -> dict[str, dict]:
    """prefix -> {"privileges": {action: entry}, "resources": {type: ARN format}} (parliament's copy)."""
    path = Path(parliament.__file__).parent / "iam_definition.json"
    return {
        service["prefix"]: {
            "privileges": {p["privilege"]: p for p in service["privileges"]},
            "resources": {r["resource"]: r["arn"] for r in service["resources"]},
        }
        for service in json.loads(path.read_text())
    }


@cache
def iam_action(service: str, operation: str) -> str | None:
    """The IAM action AWS authorises the operation as; None if none is needed; KeyError if not found."""
    if (service, operation) in EXCEPTIONS:
        return EXCEPTIONS[service, operation]
    model = botocore.session.get_session().get_service_model(service)
    documentation = model.operation_model(operation).documentation
    if NO_PERMISSION in documentation:
        return None
    for sentence in DOCUMENTED_ACTION:
        if found := sentence.search(documentation):
            return found.group(1)
    for prefix in (service, model.signing_name):
        if operation in authorization_reference().get(prefix, {}).get("privileges", {}):
            return f"{prefix}:{operation}"
    raise KeyError(f"{service}:{operation}")


def _always(_: Call) -> bool:
    return True


def resource_types(action: str) -> tuple[list[tuple[str, bool]], list[str]]:
    """([(resource type, required)], dependent actions) for the action, as the reference lists them."""
    prefix, name = action.split(":")
    entry = authorization_reference()[prefix]["privileges"][name]
    types = [(r["resource_type"].rstrip("*"), r["resource_type"].endswith("*")) for r in entry["resource_types"]]
    dependent = [d for r in entry["resource_types"] for d in r["dependent_actions"]]
    return [(t, required) for t, required in types if t], dependent


# What fills each ARN format's placeholders, by (prefix, resource type): one mapping per resource named.
PLACEHOLDERS: dict[tuple[str, str], Callable[[Call], list[dict[str, str]]]] = {
    # SageMaker writes ARNs with the resource name in lower case (DescribeEndpoint's EndpointArn).
    ("sagemaker", "endpoint"): lambda c: [{"EndpointName": c.params["EndpointName"].lower()}],
    ("sagemaker", "endpoint-config"): lambda c: [{"EndpointConfigName": c.params["EndpointConfigName"].lower()}],
    ("sagemaker", "model"): lambda c: [{"ModelName": c.params["ModelName"].lower()}],
    # A list call (no AlarmNames) is authorised on every alarm of the account and region.
    ("cloudwatch", "alarm"): lambda c: [{"AlarmName": name} for name in c.params.get("AlarmNames") or ["*"]],
    ("application-autoscaling", "ScalableTarget"): lambda c: [
        {"ResourceId": c.target_arn.rsplit("scalable-target/", 1)[-1]}
    ],
    ("ecr", "repository"): lambda c: [
        {"RepositoryName": c.params["repositoryName"], "Account": c.params.get("registryId") or c.account}
    ],
    ("cloudformation", "stack"): lambda c: [{"StackName": c.params["StackName"], "Id": STACK_ID}],
    ("sts", "role"): lambda c: [
        {"Account": c.params["RoleArn"].split(":")[4], "RoleNameWithPath": c.params["RoleArn"].split(":role/", 1)[1]}
    ],
    ("sns", "topic"): lambda c: [{"TopicName": c.params["TopicArn"].split(":")[-1]}],
    # GetParametersByPath is authorised on its Path (botocore ssm model), the others on the parameter's Name.
    ("ssm", "parameter"): lambda c: [
        {"ParameterNameWithoutLeadingSlash": (c.params.get("Name") or c.params["Path"]).lstrip("/")}
    ],
    ("s3", "bucket"): lambda c: [{"BucketName": c.params["Bucket"]}],
    ("s3", "object"): lambda c: [{"BucketName": c.params["Bucket"], "ObjectName": c.params["Key"]}],
}


def resource_arns(call: Call, action: str) -> list[str]:
    """The ARNs AWS checks the action on for this call: each resource type the reference lists that the
    call names (a required one must be named); ["*"] when it names none."""
    prefix = action.split(":")[0]
    arns = []
    for resource_type, required in resource_types(action)[0]:
        try:
            named = PLACEHOLDERS[prefix, resource_type](call)
        except KeyError:
            if required:
                raise
            continue
        template = authorization_reference()[prefix]["resources"][resource_type]
        for values in named:
            arn = template
            for key, value in {"Partition": "aws", "Region": call.region, "Account": call.account, **values}.items():
                arn = arn.replace("${" + key + "}", value)
            arns.append(arn)
    return arns or ["*"]


def request_context(call: Call) -> dict[str, str]:
    """The condition keys the request carries (those the policies of this project test)."""
    context: dict[str, str] = {}
    tags = call.params.get("Tags") or {}
    if isinstance(tags, list):  # [{"Key": …, "Value": …}] elsewhere; a map in Application Auto Scaling
        tags = {t["Key"]: t["Value"] for t in tags}
    context |= {f"aws:RequestTag/{key}": value for key, value in tags.items()}
    context |= {f"aws:ResourceTag/{key}": value for key, value in call.target_tags.items()}
    if call.service == "application-autoscaling":
        for key in ("ServiceNamespace", "ScalableDimension"):
            if key in call.params:
                name = "service-namespace" if key == "ServiceNamespace" else "scalable-dimension"
                context[f"application-autoscaling:{name}"] = call.params[key]
    if call.service == "s3" and "Prefix" in call.params:
        context["s3:prefix"] = call.params["Prefix"]
    if call.service == "cloudwatch" and call.operation == "PutMetricData":
        # The Service Authorization Reference's condition key for PutMetricData: the request's Namespace.
        context["cloudwatch:namespace"] = call.params["Namespace"]
    return context


def authorised_as(call: Call) -> list[tuple[str, str, dict[str, str]]] | None:
    """(action, resource, condition context) triples AWS checks for this call; [] if none; None if unknown."""
    try:
        action = iam_action(call.service, call.operation)
    except KeyError:
        return None
    if action is None:
        return []
    context = request_context(call)
    actions = [action] + [d for d in resource_types(action)[1] if DEPENDS_WHEN.get((action, d), _always)(call)]
    try:
        checks = [(a, arn, context) for a in actions for arn in resource_arns(call, a)]
    except KeyError:  # a resource type the action requires that PLACEHOLDERS cannot fill from this call
        return None
    if call.operation == "GetObject" and call.bucket_key:
        # Reading an SSE-KMS object is a kms:Decrypt by S3 on the caller's behalf (S3 User Guide,
        # "Using server-side encryption with AWS KMS keys": "you need kms:Decrypt permission").
        checks.append(("kms:Decrypt", call.bucket_key, {"kms:ViaService": f"s3.{call.region}.amazonaws.com"}))
    return checks


# ---- policy evaluation ------------------------------------------------------------------------------


def _matches(patterns: str | list[str], value: str, *, ignore_case: bool = False) -> bool:
    flags = re.IGNORECASE if ignore_case else 0
    return any(
        re.fullmatch(".*".join(re.escape(part).replace(r"\?", ".") for part in p.split("*")), value, flags)
        for p in ([patterns] if isinstance(patterns, str) else patterns)
    )


# Operators on ARN keys (iam:PermissionsBoundary, iam:PolicyARN) compare like their String forms here:
# the values this project writes are whole ARNs or `*` patterns (IAM User Guide, "IAM JSON policy
# elements: Condition operators", ARN condition operators).
POSITIVE = {"StringEquals": "equals", "ArnEquals": "equals", "StringLike": "like", "ArnLike": "like"}
NEGATED = {"StringNotEquals": "StringEquals", "ArnNotEquals": "ArnEquals", "StringNotLike": "StringLike"}
NEGATED |= {"ArnNotLike": "ArnLike"}


def _operator_holds(operator: str, wanted: list, actual: str | None) -> bool:
    if operator == "Null":
        return (actual is None) == (str(wanted[0]).lower() == "true")
    if operator == "Bool":
        return actual is not None and actual.lower() == str(wanted[0]).lower()
    if operator in NEGATED:
        # A negated operator holds when the key is absent (IAM User Guide, "Condition operators": "If the
        # policy condition requires that the key is not matched, ... and the right key is not present,
        # the condition is true").
        return actual is None or not _operator_holds(NEGATED[operator], wanted, actual)
    if operator in POSITIVE:
        if actual is None:
            return False
        return actual in wanted if POSITIVE[operator] == "equals" else _matches(wanted, actual)
    raise ValueError(f"the proof cannot evaluate condition operator {operator}")


def _condition_holds(condition: dict[str, dict[str, Any]], context: dict[str, str]) -> bool:
    for operator, keys in condition.items():
        for key, expected in keys.items():
            wanted = [expected] if isinstance(expected, str) else list(expected)
            if not _operator_holds(operator, wanted, context.get(key)):
                return False
    return True


def allowed(statements: list[dict], action: str, resource: str, context: dict[str, str]) -> bool:
    """IAM's rule for one identity policy set: some Allow matches and no Deny does."""
    verdict = False
    for statement in statements:
        if {"NotAction", "NotResource", "Principal"} & set(statement):
            raise ValueError(f"the proof cannot evaluate statement {statement.get('Sid')}")
        if not _matches(statement["Action"], action, ignore_case=True):
            continue
        if not _matches(statement["Resource"], resource):
            continue
        if not _condition_holds(statement.get("Condition", {}), context):
            continue
        if statement["Effect"] == "Deny":
            return False
        verdict = True
    return verdict


# ---- the policies, as the stack builds them ---------------------------------------------------------


def statements_for(call: Call) -> list[dict]:
    """The statements of the policies the call's command needs, for this call's environment."""
    statements: list[dict] = []
    for policy in call.policies:
        if policy == OPERATOR:
            repository = f"arn:aws:ecr:{call.region}:{call.account}:repository/{call.repository or 'none'}"
            scope = OperatorScope(
                call.cfg.name, "aws", call.region, call.account, call.cfg.endpoint_name, repository, call.topics
            )
            statements += operator_statements(scope)
        elif policy == DEPLOYER:
            buckets = model_data_buckets(v.model_data_s3_uri for v in load_environment_config(call.cfg.name).variants)
            scope = DeployerScope(call.cfg.name, "aws", call.region, call.account, buckets)
            statements += deployer_statements(scope)
        elif policy == CAPTURE_READER:
            bucket = f"arn:aws:s3:::{call.capture_bucket or 'none'}"
            statements += capture_reader_statements(bucket, call.bucket_key or "none", call.region)
    return statements


# ---- what the policies name, read from the world the call ran in --------------------------------------


def lookups(call: Call) -> boto3.Session:
    """A session of its own, in the same place as the CLI's: its calls are not the CLI's and are not recorded."""
    return boto3.Session(region_name=call.region)


def live_endpoint_config(call: Call) -> dict:
    sagemaker = lookups(call).client("sagemaker")
    endpoint = sagemaker.describe_endpoint(EndpointName=call.cfg.endpoint_name)
    return sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])


def capture_bucket_of(call: Call) -> str | None:
    """The bucket the live endpoint captures into: the one the stack's reader policy names."""
    try:
        destination = live_endpoint_config(call).get("DataCaptureConfig", {}).get("DestinationS3Uri")
    except ClientError:
        return None
    return destination.removeprefix("s3://").split("/", 1)[0] if destination else None


def bucket_key_of(call: Call) -> str:
    """The bucket's default SSE-KMS key ARN, "" for none."""
    try:
        rules = lookups(call).client("s3").get_bucket_encryption(Bucket=call.params["Bucket"])
    except ClientError:
        return ""
    default = rules["ServerSideEncryptionConfiguration"]["Rules"][0]["ApplyServerSideEncryptionByDefault"]
    key = default.get("KMSMasterKeyID", "")
    return key if not key or key.startswith("arn:") else f"arn:aws:kms:{call.region}:{call.account}:key/{key}"


def repository_of(call: Call) -> str:
    """The repository the primary variant's image comes from: the image stack's, which the policy names.
    A test whose SageMaker is botocore's Stubber has no endpoint in moto: its world's repository."""
    sagemaker = lookups(call).client("sagemaker")
    try:
        model = live_endpoint_config(call)["ProductionVariants"][0]["ModelName"]
    except ClientError:
        return WORLD_REPOSITORY
    image = sagemaker.describe_model(ModelName=model)["PrimaryContainer"]["Image"]
    return image.split("/", 1)[1].split("@")[0].split(":")[0]


def topics_of(call: Call) -> tuple[str, ...]:
    """The topics the serving stack outputs (`…TopicArn`): the ones the stack's operator policy names."""
    try:
        stack = lookups(call).client("cloudformation").describe_stacks(StackName=serving_stack_name(call.cfg.name))
    except ClientError:
        return ()
    outputs = stack["Stacks"][0].get("Outputs", [])
    return tuple(o["OutputValue"] for o in outputs if o["OutputKey"].endswith("TopicArn"))


class ScalableTargetTags:
    """The tags of each scalable target as the CLI's calls leave them. moto keeps no tags for Application
    Auto Scaling, so: a target the CLI did not register carries the tags the stack gives it (the same
    `scaling_tags`; tests/stacks/test_operator_policy.py checks the template has them); one the CLI
    registered anew carries the request's Tags only; one it deregistered has none."""

    def __init__(self) -> None:
        self.known: dict[str, dict[str, str]] = {}

    def before(self, call: Call) -> None:
        """Fill the call's target ARN and tags; then account for what the call does to them."""
        rid = call.params.get("ResourceId")
        if call.service != "application-autoscaling" or not rid or call.operation.startswith("Describe"):
            return
        targets = (
            lookups(call)
            .client("application-autoscaling")
            .describe_scalable_targets(ServiceNamespace=call.params["ServiceNamespace"], ResourceIds=[rid])[
                "ScalableTargets"
            ]
        )
        exists = any(t["ScalableDimension"] == call.params.get("ScalableDimension") for t in targets)
        call.target_arn = targets[0].get("ScalableTargetARN", "") if exists else NEW_TARGET
        if exists and rid not in self.known:
            stack_made = rid.startswith(f"endpoint/{call.cfg.endpoint_name}/variant/")
            self.known[rid] = scaling_tags(call.cfg.endpoint_name) if stack_made else {}
        call.target_tags = dict(self.known.get(rid, {})) if exists else {}
        if call.operation == "DeregisterScalableTarget":
            self.known.pop(rid, None)
        elif call.operation == "RegisterScalableTarget":
            self.known[rid] = {**call.target_tags, **(call.params.get("Tags") or {})}


def resolve_scope(call: Call, targets: ScalableTargetTags) -> Call:
    """What the policies name for this call's resources, read while the world it ran in is still up."""
    if call.service == "ecr":
        call.repository = repository_of(call)
    if call.service == "sns":
        call.topics = topics_of(call)
    if call.service == "s3":
        call.capture_bucket = capture_bucket_of(call)
        call.bucket_key = bucket_key_of(call)
    targets.before(call)
    return call


def running_command() -> tuple[str, dict[str, Any]]:
    """The `bin/ops` command being run and its parameters; ("", {}) outside one."""
    context = get_current_context(silent=True)
    return (context.info_name or "", dict(context.params)) if context is not None else ("", {})


# ---- the check ---------------------------------------------------------------------------------------


def policy_label(call: Call) -> str:
    """ "operator", "operator + deployer", …: the policies the command needs, as refusals name them."""
    return " + ".join(p.lower() for p in call.policies) or "no"


def refusals(calls: list[Call]) -> list[str]:
    found = []
    for call in calls:
        checks = authorised_as(call)
        if checks is None:
            found.append(f"{call.service}:{call.operation}: the ops CLI calls it, and the proof has no rule for it")
            continue
        if checks and not call.policies:
            found.append(
                f"`bin/ops {call.command}` calls {call.operation}, and ops/operations/permissions.py names no policy"
            )
            continue
        statements = statements_for(call)
        for action, resource, context in checks:
            if not allowed(statements, action, resource, context):
                found.append(f"{action} on {resource}: not allowed by {call.cfg.name}'s {policy_label(call)} policy")
    return sorted(set(found))


@pytest.fixture(autouse=True)
def every_cli_call_is_allowed_by_the_operator_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Call]]:
    calls: list[Call] = []
    targets = ScalableTargetTags()
    original: Callable[..., Any] = ops.operations.environment.check_account

    def recording(clients: AwsClients, account: str | None, env_name: str) -> None:
        # Every session a command opens on an environment has its account checked first (ops.operations.environment
        # connect and open_for_emergency): from then on, each of its calls is recorded.
        identity = load_identity(env_name)
        session = clients.session

        def record(params: dict, model: Any, **_: Any) -> None:
            # What the policies name for the call's resources is read now, while the call's world is up.
            command, options = running_command()
            call = Call(identity, session, model.service_model.service_name, model.name, dict(params))
            call.policies = policies_for(command, options) if command else (OPERATOR,)
            call.command = command
            calls.append(resolve_scope(call, targets))

        session.events.register("before-parameter-build", record)
        original(clients, account, env_name)

    monkeypatch.setattr(ops.operations.environment, "check_account", recording)
    yield calls
    problems = refusals(calls)
    assert not problems, "the policies the commands need do not allow what the CLI did:\n" + "\n".join(problems)
