"""The capacity watch's function against botocore's Stubber: every response is checked against the
SageMaker, Application Auto Scaling and CloudWatch service models (DescribeEndpoint's InstancePools,
ScalingActivity's fields, ScalingPolicy's Alarms, MetricAlarm's state), every call's parameters are
asserted, and the metric data it puts is asserted whole. ScaleOutRefused's cases run against moto in
test_capacity_watch_refusal.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from constructs.capacity_watch_handler import handler

ENDPOINT = "mangaassist-llm-prod"
REGION = "ap-northeast-1"
ARN = "arn:aws:sagemaker:ap-northeast-1:222222222222"
NOW = datetime(2026, 11, 27, 9, 5, tzinfo=UTC)  # Friday 18:05 JST
NAMESPACE = "MangaAssist/Capacity"
QUOTA = (
    "Failed to set desired instance count to 9. Reason: The account-level service limit 'ml.g5.xlarge for endpoint "
    "usage' is 8 Instances, with current utilization of 8 Instances and a request delta of 1 Instances. (Service: "
    "AmazonSageMaker; Status Code: 400; Error Code: ResourceLimitExceeded)"
)


class Aws:
    def __init__(self) -> None:
        self.sagemaker = boto3.client("sagemaker", region_name=REGION)
        self.autoscaling = boto3.client("application-autoscaling", region_name=REGION)
        self.cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        self.stubs = [Stubber(c) for c in (self.sagemaker, self.autoscaling, self.cloudwatch)]

    @property
    def clients(self) -> tuple[Any, Any, Any]:
        return self.sagemaker, self.autoscaling, self.cloudwatch

    def endpoint(self, *variants: dict[str, Any], status: str = "InService") -> None:
        self.stubs[0].add_response(
            "describe_endpoint",
            {
                "EndpointName": ENDPOINT,
                "EndpointArn": f"{ARN}:endpoint/{ENDPOINT}",
                "EndpointConfigName": "mangaassist-llm-prod-config-7",
                "EndpointStatus": status,
                "CreationTime": NOW - timedelta(days=30),
                "LastModifiedTime": NOW - timedelta(minutes=20),
                "ProductionVariants": list(variants),
            },
            {"EndpointName": ENDPOINT},
        )

    def floors(self, **min_capacity: int) -> None:
        targets = [
            {
                "ServiceNamespace": "sagemaker",
                "ResourceId": f"endpoint/{ENDPOINT}/variant/{variant}",
                "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                "MinCapacity": floor,
                "MaxCapacity": 12,
                "RoleARN": "arn:aws:iam::222222222222:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
                "CreationTime": NOW - timedelta(days=30),
            }
            for variant, floor in min_capacity.items()
        ]
        expected = {
            "ServiceNamespace": "sagemaker",
            "ResourceIds": [f"endpoint/{ENDPOINT}/variant/primary", f"endpoint/{ENDPOINT}/variant/canary"],
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        }
        self.stubs[1].add_response("describe_scalable_targets", {"ScalableTargets": targets}, expected)

    def tracking(self, *variants: str, high: dict[str, str] | None = None) -> None:
        """Each variant's target-tracking policy with its AlarmHigh and AlarmLow (DescribeScalingPolicies),
        then one DescribeAlarms for all of them; `high` sets a variant's AlarmHigh state (default OK), in
        that state since 10 minutes."""
        described = []
        for variant in variants:
            rid = f"endpoint/{ENDPOINT}/variant/{variant}"
            alarms = {
                f"TargetTracking-{rid}-AlarmHigh-1": ("GreaterThanThreshold", (high or {}).get(variant, "OK")),
                f"TargetTracking-{rid}-AlarmLow-2": ("LessThanThreshold", "OK"),
            }
            policy = {
                "PolicyARN": f"arn:aws:autoscaling:{REGION}:222222222222:scalingPolicy:1:resource/sagemaker/{rid}:"
                f"policyName/{variant}-tracking",
                "PolicyName": f"{variant}-tracking",
                "ServiceNamespace": "sagemaker",
                "ResourceId": rid,
                "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 4.0},
                "Alarms": [
                    {"AlarmName": n, "AlarmARN": f"arn:aws:cloudwatch:{REGION}:222222222222:alarm:{n}"} for n in alarms
                ],
                "CreationTime": NOW - timedelta(days=30),
            }
            expected = {
                "ServiceNamespace": "sagemaker",
                "ResourceId": rid,
                "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            }
            self.stubs[1].add_response("describe_scaling_policies", {"ScalingPolicies": [policy]}, expected)
            described += [
                {
                    "AlarmName": name,
                    "StateValue": state,
                    "StateTransitionedTimestamp": NOW - timedelta(minutes=10),
                    "StateUpdatedTimestamp": NOW - timedelta(minutes=1),  # EvaluationState moves it too
                    "ComparisonOperator": operator,
                }
                for name, (operator, state) in alarms.items()
            ]
        names = [a["AlarmName"] for a in described]
        self.stubs[2].add_response("describe_alarms", {"MetricAlarms": described}, {"AlarmNames": names})

    def activities(self, variant: str, *pages: list[dict[str, Any]]) -> None:
        params = {
            "ServiceNamespace": "sagemaker",
            "ResourceId": f"endpoint/{ENDPOINT}/variant/{variant}",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        }
        for number, page in enumerate(pages or ([],)):
            token = {"NextToken": f"t{number + 1}"} if number + 1 < len(pages) else {}
            expected = {**params, **({"NextToken": f"t{number}"} if number else {})}
            self.stubs[1].add_response("describe_scaling_activities", {"ScalingActivities": page, **token}, expected)

    def expect_metrics(self, data: list[dict[str, Any]]) -> None:
        self.stubs[2].add_response("put_metric_data", {}, {"Namespace": NAMESPACE, "MetricData": data})


def activity(variant: str, minutes_ago: float, status: str, target: int, message: str = "", took: float | None = 2):
    started = NOW - timedelta(minutes=minutes_ago)
    item = {
        "ActivityId": f"{variant}-{minutes_ago}",
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{ENDPOINT}/variant/{variant}",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "Description": f"Setting desired instance count to {target}.",
        "Cause": "monitor alarm TargetTracking-endpoint/x-AlarmHigh-1 in state ALARM triggered policy p",
        "StartTime": started,
        "StatusCode": status,
    }
    if message:
        item["StatusMessage"] = message
    if took is not None:
        item["EndTime"] = started + timedelta(minutes=took)
    return item


def datum(variant: str, name: str, value: float, instance_type: str | None = None) -> dict[str, Any]:
    dimensions = [{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "VariantName", "Value": variant}]
    if instance_type:
        dimensions.append({"Name": "InstanceType", "Value": instance_type})
    return {"MetricName": name, "Dimensions": dimensions, "Timestamp": NOW, "Value": value, "Unit": "Count"}


def variant_data(
    variant: str,
    short: float,
    in_service: float,
    failed: float,
    below_max: float,
    refused: float = 0.0,
    pools: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """The metrics one run puts for a variant, in the handler's order (InPeakWindow 0: no PEAK_WINDOWS given)."""
    return [
        datum(variant, "InstancesShort", short),
        datum(variant, "InstancesInService", in_service),
        datum(variant, "FailedScalingActivities", failed),
        datum(variant, "InstancesBelowMax", below_max),
        *(datum(variant, "InstancesInService", count, instance_type) for instance_type, count in (pools or {}).items()),
        datum(variant, "ScaleOutRefused", refused),
        datum(variant, "InPeakWindow", 0.0),
    ]  # fmt: skip


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    monkeypatch.setenv("ENDPOINT_NAME", ENDPOINT)
    monkeypatch.setenv("VARIANT_NAMES", "primary,canary")
    monkeypatch.setenv("METRIC_NAMESPACE", NAMESPACE)
    world = Aws()
    for stub in world.stubs:
        stub.activate()
    yield world
    for stub in world.stubs:
        stub.assert_no_pending_responses()
        stub.deactivate()


def run(aws: Aws) -> dict[str, Any]:
    return handler.handler({"source": "aws.events"}, None, clients=aws.clients, now=NOW)


def test_a_scale_out_still_provisioning_is_short_by_the_missing_instances_per_pool(aws) -> None:
    pools = [
        {"InstanceType": "ml.g5.xlarge", "CurrentInstanceCount": 4},
        {"InstanceType": "ml.g6.xlarge", "CurrentInstanceCount": 1},
    ]
    aws.endpoint(
        {"VariantName": "primary", "CurrentInstanceCount": 5, "DesiredInstanceCount": 8, "InstancePools": pools},
        {"VariantName": "canary", "CurrentInstanceCount": 1, "DesiredInstanceCount": 1},
        status="Updating",
    )
    aws.floors(primary=7, canary=1)
    aws.tracking("primary", "canary", high={"primary": "ALARM"})  # above target, and the scale-out is under way
    aws.activities(
        "primary", [activity("primary", 6, "InProgress", 8, took=None), activity("primary", 90, "Successful", 5)]
    )
    aws.activities("canary", [activity("canary", 300, "Successful", 1)])
    aws.expect_metrics(  # below max: MaxCapacity 12 - desired 8
        variant_data("primary", 3, 5, 0, 4, pools={"ml.g5.xlarge": 4, "ml.g6.xlarge": 1})
        + variant_data("canary", 0, 1, 0, 11)
    )

    assert run(aws) == {"endpoint": ENDPOINT, "status": "Updating", "metrics": 14}


def test_a_scheduled_raise_refused_by_the_quota_is_short_against_the_floor_and_a_failure(aws) -> None:
    """SageMaker refused the new count, so DesiredInstanceCount never moved: only the floor shows it. The
    load is below target (AlarmHigh OK): no refused scale-out of target tracking, instances-short pages."""
    aws.endpoint(
        {"VariantName": "primary", "CurrentInstanceCount": 3, "DesiredInstanceCount": 3},
        {"VariantName": "canary", "CurrentInstanceCount": 1, "DesiredInstanceCount": 1},
    )
    aws.floors(primary=7, canary=1)
    aws.tracking("primary", "canary")
    aws.activities(
        "primary",
        [
            activity("primary", 1, "Failed", 7, QUOTA, took=0.5),
            activity("primary", 4, "Failed", 7, QUOTA, took=0.5),
            activity("primary", 16, "Unfulfilled", 6, took=1),  # ended 15 min ago: still in the window
            activity("primary", 40, "Failed", 6, QUOTA),  # older: stops the reading
        ],
    )
    aws.activities("canary")
    aws.expect_metrics(variant_data("primary", 4, 3, 3, 9) + variant_data("canary", 0, 1, 0, 11))

    run(aws)


def test_a_target_tracking_scale_out_refused_at_once_is_not_short_but_refused(aws) -> None:
    """Above target since 10 min, the last attempt refused by the quota a minute ago: the desired count
    never moved (InstancesShort 0), ScaleOutRefused 1."""
    aws.endpoint({"VariantName": "primary", "CurrentInstanceCount": 4, "DesiredInstanceCount": 4})
    aws.floors(primary=2)
    aws.tracking("primary", high={"primary": "ALARM"})
    aws.activities(
        "primary",
        [activity("primary", 1, "Failed", 5, QUOTA, took=0), activity("primary", 9, "Failed", 5, QUOTA, took=0)],
    )
    aws.expect_metrics(variant_data("primary", 0, 4, 2, 8, refused=1))

    run(aws)


def test_activities_are_read_page_by_page_until_one_is_older_than_the_window(aws) -> None:
    aws.endpoint({"VariantName": "primary", "CurrentInstanceCount": 2, "DesiredInstanceCount": 2})
    aws.floors(primary=2)
    aws.tracking("primary")
    recent = [activity("primary", m, "Failed", 3, QUOTA) for m in (1, 2)]
    aws.activities(
        "primary", recent, [activity("primary", 3, "Failed", 3, QUOTA), activity("primary", 30, "Successful", 2)]
    )
    aws.expect_metrics(variant_data("primary", 0, 2, 3, 10))  # not refused: below target (AlarmHigh OK)

    run(aws)  # the Stubber has no third page: a further call would fail here


def test_a_missing_endpoint_fails_the_run_and_publishes_nothing(aws, monkeypatch) -> None:
    monkeypatch.setenv("VARIANT_NAMES", "primary")
    aws.stubs[0].add_client_error(
        "describe_endpoint",
        service_error_code="ValidationException",
        service_message=f'Could not find endpoint "{ENDPOINT}".',
        http_status_code=400,
    )

    with pytest.raises(aws.sagemaker.exceptions.ClientError, match="Could not find endpoint"):
        run(aws)  # nothing put: the instances-short alarms count the silence as breaching


def test_scaling_floors_ask_for_the_endpoints_targets_only() -> None:
    autoscaling = boto3.client("application-autoscaling", region_name=REGION)
    with Stubber(autoscaling) as stub:
        stub.add_response(
            "describe_scalable_targets",
            {"ScalableTargets": []},
            {
                "ServiceNamespace": "sagemaker",
                "ResourceIds": [f"endpoint/{ENDPOINT}/variant/primary"],
                "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            },
        )
        assert handler.scaling_floors(autoscaling, ENDPOINT, ["primary"]) == {}
        assert handler.scaling_floors(autoscaling, ENDPOINT, []) == {}  # never an unfiltered list
