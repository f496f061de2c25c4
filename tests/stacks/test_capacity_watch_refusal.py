"""The capacity watch's ScaleOutRefused against moto: SageMaker's endpoint, Application Auto Scaling's
scalable target and target-tracking policy, CloudWatch's alarms and the metrics the watch puts are moto's.

Two things moto 5.2.5 does not do are put into its backend state, not into our code:
- DescribeScalingActivities is not implemented: the sandbox's response (workbench/sandbox/scaling.py, also what
  `make sandbox` serves) reads the activities a test appends to the backend's record.
- A target-tracking policy on a SageMaker variant gets no alarms (moto makes them for DynamoDB and ECS
  only): the test creates the two alarms Application Auto Scaling creates, with CloudWatch's own
  PutMetricAlarm, and attaches them to moto's policy, so DescribeScalingPolicies lists them as AWS does.
  Their state is set with CloudWatch's SetAlarmState, which stamps the transition time.
One test proves every call the watch makes is allowed by the role policy in prod's template."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.applicationautoscaling.models import FakeApplicationAutoscalingPolicy, applicationautoscaling_backends
from moto.cloudwatch.models import cloudwatch_backends

from constructs.capacity_watch import NAMESPACE
from constructs.capacity_watch_handler import handler
from tests.operator_policy_check import Call, allowed, authorised_as
from workbench.sandbox import scaling

REGION = "ap-northeast-1"  # prod's: the template's ARNs name it
ACCOUNT = "123456789012"  # moto's default
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
QUOTA = (
    "Failed to set desired instance count to 5. Reason: The account-level service limit 'ml.g5.xlarge for endpoint "
    "usage' is 4 Instances, with current utilization of 4 Instances and a request delta of 1 Instances. (Service: "
    "AmazonSageMaker; Status Code: 400; Error Code: ResourceLimitExceeded)"
)


@dataclass
class World:
    endpoint: str
    session: boto3.Session
    alarms: dict[str, str] = field(default_factory=dict)  # "high"/"low" -> alarm name
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def client(self, service: str) -> Any:
        return self.session.client(service)

    def set_alarm(self, which: str, state: str) -> datetime:
        """Sets the tracking alarm's state; returns when CloudWatch says it changed."""
        cloudwatch = self.client("cloudwatch")
        name = self.alarms[which]
        cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")
        (alarm,) = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"]
        return alarm["StateUpdatedTimestamp"]

    def activity(self, variant: str, started: datetime, status: str, message: str = "") -> None:
        """One scaling activity of the variant, as Application Auto Scaling records it (SageMaker guide,
        endpoint-scaling-query-history), put into moto's backend record the sandbox's response reads."""
        record = scaling.record(applicationautoscaling_backends[ACCOUNT][REGION])
        record.append(
            {
                "ActivityId": str(uuid.uuid4()),
                "ServiceNamespace": "sagemaker",
                "ResourceId": handler.resource_id(self.endpoint, variant),
                "ScalableDimension": DIMENSION,
                "Description": "Setting desired instance count to 5.",
                "Cause": f"monitor alarm {self.alarms['high']} in state ALARM triggered policy primary-tracking",
                "StartTime": started.timestamp(),
                "StatusCode": status,
                **({"EndTime": started.timestamp() + 1} if status not in ("Pending", "InProgress") else {}),
                **({"StatusMessage": message} if message else {}),
            }
        )

    def run(self, now: datetime) -> dict[str, float]:
        """Runs the watch as Lambda would (its environment), returns what CloudWatch now holds per metric
        of the primary variant at `now`, read back from moto."""
        clients = (self.client("sagemaker"), self.client("application-autoscaling"), self.client("cloudwatch"))
        handler.handler({"source": "aws.events"}, None, clients=clients, now=now)
        cloudwatch = self.client("cloudwatch")
        found = {}
        for metric in cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"]:
            dimensions = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
            if dimensions.get("VariantName") != "primary" or "InstanceType" in dimensions:
                continue
            (point,) = cloudwatch.get_metric_statistics(
                Namespace=NAMESPACE,
                MetricName=metric["MetricName"],
                Dimensions=metric["Dimensions"],
                StartTime=now - timedelta(minutes=1),
                EndTime=now + timedelta(minutes=1),
                Period=60,
                Statistics=["Maximum"],
            )["Datapoints"]
            found[metric["MetricName"]] = point["Maximum"]
        return found


def _tracking_alarms(world: World, policy_name: str) -> None:
    """The AlarmHigh and AlarmLow Application Auto Scaling creates for a target-tracking policy, named as
    it names them ("TargetTracking-<resource id>-AlarmHigh-<id>", DescribeScalingPolicies' Alarms)."""
    cloudwatch = world.client("cloudwatch")
    resource = handler.resource_id(world.endpoint, "primary")
    for which, operator in (("high", "GreaterThanThreshold"), ("low", "LessThanThreshold")):
        name = f"TargetTracking-{resource}-Alarm{which.title()}-{uuid.uuid4()}"
        cloudwatch.put_metric_alarm(
            AlarmName=name,
            Namespace="AWS/SageMaker",
            MetricName="ConcurrentRequestsPerModel",
            Dimensions=[{"Name": "EndpointName", "Value": world.endpoint}, {"Name": "VariantName", "Value": "primary"}],
            Statistic="Average",
            Period=60,
            EvaluationPeriods=3,
            Threshold=4.0,
            ComparisonOperator=operator,
        )
        world.alarms[which] = name
        key = FakeApplicationAutoscalingPolicy.formulate_key("sagemaker", resource, DIMENSION, policy_name)
        policy = applicationautoscaling_backends[ACCOUNT][REGION].policies[key]
        policy.alarms.append(cloudwatch_backends[ACCOUNT][REGION].alarms[name])


@pytest.fixture
def world(prod, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for owner, name, replacement in scaling.patches():  # moto answers DescribeScalingActivities
        monkeypatch.setattr(owner, name, replacement, raising=False)
    endpoint = prod.cfg.endpoint_name
    monkeypatch.setenv("ENDPOINT_NAME", endpoint)
    monkeypatch.setenv("VARIANT_NAMES", "primary,canary")
    monkeypatch.setenv("METRIC_NAMESPACE", NAMESPACE)
    with mock_aws():
        world = World(endpoint, boto3.Session(region_name=REGION))
        sagemaker = world.client("sagemaker")
        sagemaker.create_model(
            ModelName="m",
            ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/execution",
            PrimaryContainer={"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/mangaassist-llm:1"},
        )
        variants = [  # moto's instance-type list lacks ml.g5.*; the watch never reads the type
            {"VariantName": name, "ModelName": "m", "InitialInstanceCount": count, "InstanceType": "ml.g4dn.xlarge"}
            for name, count in (("primary", 4), ("canary", 1))
        ]
        sagemaker.create_endpoint_config(EndpointConfigName="c", ProductionVariants=variants)
        sagemaker.create_endpoint(EndpointName=endpoint, EndpointConfigName="c")
        autoscaling = world.client("application-autoscaling")
        resource = handler.resource_id(endpoint, "primary")  # the canary is not autoscaled here
        target = {"ServiceNamespace": "sagemaker", "ResourceId": resource, "ScalableDimension": DIMENSION}
        autoscaling.register_scalable_target(**target, MinCapacity=2, MaxCapacity=12)
        autoscaling.put_scaling_policy(
            **target,
            PolicyName="primary-tracking",
            PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": 4.0,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                },
            },
        )
        _tracking_alarms(world, "primary-tracking")
        world.session.events.register(
            "before-parameter-build",
            lambda params, model, **_: world.calls.append((model.service_model.service_name, model.name, dict(params))),
        )
        yield world


def test_a_scale_out_refused_while_above_target_is_1(world: World) -> None:
    entered = world.set_alarm("high", "ALARM")
    world.activity("primary", entered + timedelta(seconds=5), "Failed", QUOTA)

    published = world.run(now=entered + timedelta(minutes=1))

    assert published["ScaleOutRefused"] == 1
    assert published["InstancesShort"] == 0  # the desired count never moved: only the refusal shows it
    assert published["FailedScalingActivities"] == 1
    # The canary is not autoscaled here: it has no scale-out to refuse, so no such metric.
    refusals = world.client("cloudwatch").list_metrics(Namespace=NAMESPACE, MetricName="ScaleOutRefused")["Metrics"]
    assert [{d["Value"] for d in m["Dimensions"]} for m in refusals] == [{world.endpoint, "primary"}]


@pytest.mark.parametrize(
    ("states", "activities", "minutes", "failed"),
    [
        # Only the alarm that fires above the target counts: the AlarmLow in ALARM is below it.
        pytest.param({"high": "OK", "low": "ALARM"}, [(5, "Failed", QUOTA)], 1, 1, id="failed-below-target"),
        pytest.param({"high": "ALARM"}, [(5, "InProgress", "")], 1, 0, id="no-failure-above-target"),
        # A newer activity under way: the capacity is coming, and instances-short watches it from here.
        pytest.param({"high": "ALARM"}, [(5, "Failed", "Cannot update in-progress endpoint"), (65, "InProgress", "")],
                     2, 1, id="refusal-its-retry-answered"),
    ],
)  # fmt: skip
def test_no_refusal_standing_above_target_is_0(world: World, states, activities, minutes, failed) -> None:
    for which, state in states.items():
        entered = world.set_alarm(which, state)
    for seconds, status, message in activities:
        world.activity("primary", entered + timedelta(seconds=seconds), status, message)

    published = world.run(now=entered + timedelta(minutes=minutes))

    assert published["ScaleOutRefused"] == 0
    assert published["FailedScalingActivities"] == failed  # still the ticket's


def test_a_refusal_stays_1_while_the_alarm_stays_in_alarm_past_the_window(world: World) -> None:
    """The failure answered this demand (it started after the alarm went to ALARM), however long ago."""
    entered = world.set_alarm("high", "ALARM")
    world.activity("primary", entered + timedelta(seconds=5), "Failed", QUOTA)

    later = entered + handler.FAILED_WINDOW + timedelta(minutes=5)
    published = world.run(now=later)

    assert published["ScaleOutRefused"] == 1
    assert published["FailedScalingActivities"] == 0  # the ticket's 15-minute level has passed


def test_an_old_failure_before_the_alarm_went_to_alarm_is_0(world: World) -> None:
    """A failure from another episode, outside the window, is not this demand's refusal."""
    world.activity("primary", datetime.now(UTC) - timedelta(hours=2), "Failed", QUOTA)
    entered = world.set_alarm("high", "ALARM")

    assert world.run(now=entered + timedelta(minutes=1))["ScaleOutRefused"] == 0


def test_every_call_the_watch_makes_is_allowed_by_its_role_in_prods_template(world: World, prod) -> None:
    entered = world.set_alarm("high", "ALARM")
    world.activity("primary", entered + timedelta(seconds=5), "Failed", QUOTA)
    world.calls.clear()  # the world's own set-up is not the watch's
    world.run(now=entered + timedelta(minutes=1))
    watch_calls = [c for c in world.calls if c[1] not in ("ListMetrics", "GetMetricStatistics")]  # the test's reads

    (policy,) = [
        r for k, r in prod.serving.find_resources("AWS::IAM::Policy").items() if k.startswith("CapacityWatchRole")
    ]
    # The log statement names its log group by GetAtt; the watch makes no Logs API call (Lambda writes its logs).
    statements = [
        s
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if isinstance(s["Resource"], (str, list)) and "logs:" not in json.dumps(s["Action"])
    ]
    operations = {operation for _, operation, _ in watch_calls}
    assert {"DescribeScalingPolicies", "DescribeAlarms", "DescribeScalingActivities", "PutMetricData"} <= operations
    # Never an unfiltered DescribeAlarms (it would list every alarm of the account): this policy's, by name.
    (asked,) = [params["AlarmNames"] for _, operation, params in watch_calls if operation == "DescribeAlarms"]
    assert sorted(asked) == sorted(world.alarms.values())
    refused = []
    for service, operation, params in watch_calls:
        call = Call(prod.cfg, world.session, service, operation, params)
        checks = authorised_as(call)
        assert checks is not None, f"{service}:{operation}: the proof has no rule for it"
        refused += [f"{a} on {r}" for a, r, context in checks if not allowed(statements, a, r, context)]
    assert not refused, refused


def test_the_newest_activity_decides_whatever_order_they_come_in() -> None:
    """DescribeScalingActivities documents no order: the newest by StartTime decides."""
    entered = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    failed = {"StartTime": entered + timedelta(seconds=5), "StatusCode": "Failed"}
    retried = {"StartTime": entered + timedelta(seconds=65), "StatusCode": "Successful"}
    above = [{"StateValue": "ALARM", "StateUpdatedTimestamp": entered}]
    since = entered + timedelta(minutes=2) - handler.FAILED_WINDOW
    assert handler.scale_out_refused([retried, failed], above, since) == 0
    assert handler.scale_out_refused([failed, retried], above, since) == 0
    assert handler.scale_out_refused([failed], above, since) == 1


def test_a_recent_refusal_counts_through_a_flap_of_the_alarm() -> None:
    """The alarm went OK and back to ALARM after the refusal, before target tracking tried again: a refusal
    within the window still counts; one older than the window, before this episode, does not."""
    entered = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    refused = {"StartTime": entered - timedelta(minutes=1), "StatusCode": "Failed"}
    above = [{"StateValue": "ALARM", "StateTransitionedTimestamp": entered, "StateUpdatedTimestamp": entered}]
    now = entered + timedelta(seconds=30)
    assert handler.scale_out_refused([refused], above, now - handler.FAILED_WINDOW) == 1
    older = {"StartTime": now - handler.FAILED_WINDOW - timedelta(minutes=1), "StatusCode": "Failed"}
    assert handler.scale_out_refused([older], above, now - handler.FAILED_WINDOW) == 0
