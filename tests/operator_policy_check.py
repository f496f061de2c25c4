"""Proof that `MangaAssist-<env>-Operator` is enough: every AWS call an ops command makes in a test is
allowed by the policy's statements (constructs/operator_policy.py, the same function the stack uses).

moto can enforce IAM, but only on actions: it authorises every service but S3 against resource `*`
(moto/core/responses.py), so it cannot tell an endpoint-scoped statement from a wide one. Here each
call the CLI makes is recorded with botocore's `before-parameter-build` event on the session the CLI
opens for the environment, turned into the IAM action and resource ARN AWS authorises it as, and
evaluated with moto's own policy engine (`moto.iam.access_control.IAMPolicy`). A call this module
has no rule for fails the test: a new AWS call in the CLI needs a rule here and a statement there.

Used as an autouse fixture by tests/ops and tests/capacity: every CLI scenario of the suite is checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.iam.access_control import IAMPolicy, PermissionResult

import ops.capacity
import ops.environment
from config import EnvironmentConfig
from constructs.operator_policy import OperatorScope, operator_statements

MOTO_ACCOUNT = "123456789012"
WORLD_REPOSITORY = "mangaassist-llm"  # tests/ops/conftest.py's worlds push their images there
NO_PERMISSION_NEEDED = {("sts", "GetCallerIdentity")}  # AWS: "No permissions are required"
STACK_ID = "00000000-0000-0000-0000-000000000000"


@dataclass
class Call:
    cfg: EnvironmentConfig
    session: boto3.Session
    service: str
    operation: str
    params: dict[str, Any]
    repository: str = ""  # ECR calls: the repository the endpoint's images come from
    capture_bucket: str | None = None  # S3 calls: the bucket the endpoint captures into

    @property
    def region(self) -> str:
        return self.session.region_name

    @property
    def account(self) -> str:
        return self.cfg.account or MOTO_ACCOUNT

    def arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account}:{resource}"


def authorised_as(call: Call) -> list[tuple[str, str]] | None:
    """(IAM action, resource ARN) pairs AWS checks for this call; None when no rule is known."""
    p, op = call.params, call.operation
    match call.service, op:
        case "sagemaker", "DescribeEndpoint" | "UpdateEndpointWeightsAndCapacities":
            return [(f"sagemaker:{op}", call.arn("sagemaker", f"endpoint/{p['EndpointName'].lower()}"))]
        case "sagemaker", "DescribeEndpointConfig":
            return [(f"sagemaker:{op}", call.arn("sagemaker", f"endpoint-config/{p['EndpointConfigName'].lower()}"))]
        case "sagemaker", "DescribeModel":
            return [(f"sagemaker:{op}", call.arn("sagemaker", f"model/{p['ModelName'].lower()}"))]
        case "sagemaker-runtime", "InvokeEndpoint" | "InvokeEndpointWithResponseStream":
            return [(f"sagemaker:{op}", call.arn("sagemaker", f"endpoint/{p['EndpointName'].lower()}"))]
        case "cloudwatch", "DescribeAlarms":
            names = p.get("AlarmNames") or ["*"]  # a list call: every alarm of the account and region
            return [("cloudwatch:DescribeAlarms", call.arn("cloudwatch", f"alarm:{name}")) for name in names]
        case "cloudwatch", "GetMetricData":
            return [("cloudwatch:GetMetricData", "*")]
        case "application-autoscaling", _:
            return [(f"application-autoscaling:{op}", "*")]
        case "ecr", "DescribeImages" | "BatchGetImage" | "PutImage":
            registry = p.get("registryId") or call.account
            repository = f"arn:aws:ecr:{call.region}:{registry}:repository/{p['repositoryName']}"
            return [(f"ecr:{op}", repository)]
        case "cloudformation", "DescribeStacks":
            return [("cloudformation:DescribeStacks", call.arn("cloudformation", f"stack/{p['StackName']}/{STACK_ID}"))]
        case "s3", "ListObjectsV2":
            return [("s3:ListBucket", f"arn:aws:s3:::{p['Bucket']}")]
        case "s3", "GetObject":
            return [("s3:GetObject", f"arn:aws:s3:::{p['Bucket']}/{p['Key']}")]
    return None


def lookups(call: Call) -> boto3.Session:
    """A session of its own, in the same place as the CLI's: its calls are not the CLI's and are not recorded."""
    return boto3.Session(region_name=call.region)


def resolve_scope(call: Call) -> Call:
    """What the policy names for this call's resources, read while the world it ran in is still up."""
    if call.service == "ecr":
        call.repository = repository_of(call)
    if call.service == "s3":
        call.capture_bucket = capture_bucket_of(call)
    return call


def live_endpoint_config(call: Call) -> dict:
    sagemaker = lookups(call).client("sagemaker")
    endpoint = sagemaker.describe_endpoint(EndpointName=call.cfg.endpoint_name)
    return sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])


def capture_bucket_of(call: Call) -> str | None:
    """The bucket the live endpoint captures into: the one the stack's policy names (its CaptureBucket)."""
    destination = live_endpoint_config(call).get("DataCaptureConfig", {}).get("DestinationS3Uri")
    return destination.removeprefix("s3://").split("/", 1)[0] if destination else None


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


def policy_for(call: Call) -> IAMPolicy:
    bucket, repository = call.capture_bucket, call.repository or "none"
    scope = OperatorScope(
        env_name=call.cfg.name,
        partition="aws",
        region=call.region,
        account=call.account,
        endpoint_name=call.cfg.endpoint_name,
        repository_arn=f"arn:aws:ecr:{call.region}:{call.account}:repository/{repository}",
        capture_bucket_arn=f"arn:aws:s3:::{bucket}" if bucket else None,
        key_arn=call.arn("kms", "key/capture"),
    )
    return IAMPolicy(json.dumps({"Version": "2012-10-17", "Statement": operator_statements(scope)}))


def refusals(calls: list[Call]) -> list[str]:
    found = []
    for call in calls:
        if (call.service, call.operation) in NO_PERMISSION_NEEDED:
            continue
        pairs = authorised_as(call)
        if pairs is None:
            found.append(f"{call.service}:{call.operation}: the ops CLI calls it, and the proof has no rule for it")
            continue
        policy = policy_for(call)
        for action, resource in pairs:
            if policy.is_action_permitted(action, resource) != PermissionResult.PERMITTED:
                found.append(f"{action} on {resource}: not allowed by {call.cfg.name}'s operator policy")
    return sorted(set(found))


@pytest.fixture(autouse=True)
def every_cli_call_is_allowed_by_the_operator_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Call]]:
    calls: list[Call] = []
    original: Callable[..., Any] = ops.environment.connect

    def recording(cfg: EnvironmentConfig, region: str | None, overrides: dict[str, Any]):
        environment = original(cfg, region, overrides)
        session = environment.clients.session

        def record(params: dict, model: Any, **_: Any) -> None:
            # What the policy names for the call's resources is read now, while the call's world is up.
            call = Call(environment.cfg, session, model.service_model.service_name, model.name, dict(params))
            calls.append(resolve_scope(call))

        session.events.register("before-parameter-build", record)
        return environment

    # Every command reaches AWS through ops.environment.connect (ops capacity imports it by name).
    monkeypatch.setattr(ops.environment, "connect", recording)
    monkeypatch.setattr(ops.capacity, "connect", recording)
    yield calls
    problems = refusals(calls)
    assert not problems, "the operator policy does not allow what the CLI did:\n" + "\n".join(problems)
