"""The capacity watch in the synthesised serving stacks (one synth per environment, shared): a function
run every minute once the endpoint exists, with least privilege, and alarms on what it publishes
(the handler's own metric names) that notify the paging or the ticket topic."""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template

from constructs.capacity_watch import NAMESPACE, REFUSED_MINUTES, CapacityWatch, short_minutes
from constructs.capacity_watch_handler.handler import FAILED_ACTIVITIES, INSTANCES_SHORT, SCALE_OUT_REFUSED

PAGING = (INSTANCES_SHORT, SCALE_OUT_REFUSED)


def _one(template, kind: str, prefix: str) -> tuple[str, dict]:
    (found,) = [(k, r) for k, r in template.find_resources(kind).items() if k.startswith(prefix)]
    return found


def _watch_alarms(template) -> dict[str, dict]:
    return {k: a for k, a in template.find_resources("AWS::CloudWatch::Alarm").items() if k.startswith("CapacityWatch")}


def test_every_minute_once_the_endpoint_exists_and_never_retried(prod) -> None:
    (endpoint,) = prod.serving.find_resources("AWS::SageMaker::Endpoint")
    (function,) = prod.serving.find_resources("AWS::Lambda::Function", {"Properties": {"Handler": "handler.handler"}})
    _, rule = _one(prod.serving, "AWS::Events::Rule", "CapacityWatch")
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 minute)"
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function, "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}
    assert endpoint in rule["DependsOn"]


def test_the_function_watches_this_endpoints_variants_and_logs_encrypted_with_retention(prod) -> None:
    prod.serving.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "handler.handler",
            "Runtime": "python3.14",
            "Environment": {
                "Variables": {
                    "ENDPOINT_NAME": "mangaassist-llm-prod",
                    "VARIANT_NAMES": "primary,canary",
                    "METRIC_NAMESPACE": NAMESPACE,
                }
            },
            "LoggingConfig": {"LogGroup": {"Ref": Match.string_like_regexp("^CapacityWatchLogs")}},
        },
    )
    _, logs = _one(prod.serving, "AWS::Logs::LogGroup", "CapacityWatchLogs")
    assert logs["Properties"]["RetentionInDays"] == 90
    assert "KmsKeyId" in logs["Properties"]


def test_least_privilege(prod) -> None:
    """Exactly these statements: each action scoped as far as the Service Authorization Reference allows."""
    _, policy = _one(prod.serving, "AWS::IAM::Policy", "CapacityWatchRoleDefaultPolicy")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    by_action = {json.dumps(s["Action"]): s for s in statements}
    assert set(by_action) == {
        '"sagemaker:DescribeEndpoint"',
        '["application-autoscaling:DescribeScalableTargets", "application-autoscaling:DescribeScalingActivities", '
        '"application-autoscaling:DescribeScalingPolicies"]',
        '"cloudwatch:DescribeAlarms"',
        '"cloudwatch:PutMetricData"',
        '["logs:CreateLogStream", "logs:PutLogEvents"]',
    }
    assert all(s["Effect"] == "Allow" for s in statements) and len(statements) == len(by_action)
    describe = by_action['"sagemaker:DescribeEndpoint"']
    assert ":endpoint/mangaassist-llm-prod" in json.dumps(describe["Resource"])
    scaling = next(s for a, s in by_action.items() if "application-autoscaling" in a)
    assert scaling["Resource"] == "*"  # no resource type for these (Service Authorization Reference)
    alarms = by_action['"cloudwatch:DescribeAlarms"']
    # Only this endpoint's target-tracking alarms, never "*" (that would read every alarm in the account).
    assert ":alarm:TargetTracking-endpoint/mangaassist-llm-prod/variant/*" in json.dumps(alarms["Resource"])
    assert alarms["Resource"] != "*"
    assert "Condition" not in alarms
    metrics = by_action['"cloudwatch:PutMetricData"']
    assert metrics["Resource"] == "*"
    assert metrics["Condition"] == {"StringEquals": {"cloudwatch:namespace": NAMESPACE}}
    logs = by_action['["logs:CreateLogStream", "logs:PutLogEvents"]']
    assert "CapacityWatchLogs" in json.dumps(logs["Resource"])
    _, role = _one(prod.serving, "AWS::IAM::Role", "CapacityWatchRole")
    assert "ManagedPolicyArns" not in role["Properties"]


def test_instances_short_past_the_plans_provisioning_time_pages_and_so_does_a_silent_watch(prod) -> None:
    # prod plans on 4 min (planning.provisioning_minutes): short for 4 + 4 minutes pages, not a fixed 12.
    assert short_minutes(4) == 8 and short_minutes(8) == 12
    for variant in ("primary", "canary"):
        prod.serving.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": NAMESPACE,
                "MetricName": INSTANCES_SHORT,
                "Dimensions": Match.array_with([{"Name": "VariantName", "Value": variant}]),
                "Statistic": "Maximum",
                "Period": 60,
                "EvaluationPeriods": 8,
                "Threshold": 0,
                "ComparisonOperator": "GreaterThanThreshold",
                "TreatMissingData": "breaching",
                "AlarmActions": [{"Ref": Match.string_like_regexp("^PagingTopic")}],
            },
        )


def test_a_failed_scaling_activity_is_a_ticket_that_a_lost_sample_does_not_clear(prod) -> None:
    for variant in ("primary", "canary"):
        prod.serving.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": NAMESPACE,
                "MetricName": FAILED_ACTIVITIES,
                "Dimensions": Match.array_with([{"Name": "VariantName", "Value": variant}]),
                "EvaluationPeriods": 1,
                "Threshold": 0,
                "TreatMissingData": "ignore",
                "AlarmActions": [{"Ref": Match.string_like_regexp("^TicketsTopic")}],
            },
        )


def test_a_refused_scale_out_pages_after_two_minutes_for_each_autoscaled_variant(prod) -> None:
    assert REFUSED_MINUTES == 2  # the construct's documented choice (docs/reference/alarms.md): one sample may be a retry's gap
    for variant in prod.cfg.autoscaling:
        prod.serving.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": NAMESPACE,
                "MetricName": SCALE_OUT_REFUSED,
                "Dimensions": [
                    {"Name": "EndpointName", "Value": prod.cfg.endpoint_name},
                    {"Name": "VariantName", "Value": variant},
                ],
                "Statistic": "Maximum",
                "Period": 60,
                "EvaluationPeriods": REFUSED_MINUTES,
                "Threshold": 0,
                "ComparisonOperator": "GreaterThanThreshold",
                "TreatMissingData": "ignore",
                "AlarmActions": [{"Ref": Match.string_like_regexp("^PagingTopic")}],
                "OKActions": [{"Ref": Match.string_like_regexp("^PagingTopic")}],
            },
        )


def test_a_refused_scale_out_is_not_a_rollback_alarm(prod) -> None:
    """SageMaker caps the rollback alarms of a deployment; a refusal during a deploy is not the release's fault."""
    refused = {k for k, a in _watch_alarms(prod.serving).items() if a["Properties"]["MetricName"] == SCALE_OUT_REFUSED}
    assert len(refused) == len(prod.cfg.autoscaling)
    (endpoint,) = prod.serving.find_resources("AWS::SageMaker::Endpoint").values()
    rollback = {
        a["AlarmName"]["Ref"] for a in endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    }
    assert rollback and not rollback & refused


def test_the_watch_alarms_notify_their_topic_and_start_after_the_schedule(prod) -> None:
    rule, _ = _one(prod.serving, "AWS::Events::Rule", "CapacityWatch")
    alarms = _watch_alarms(prod.serving)
    assert len(alarms) == len(prod.cfg.variants) + 2 * len(prod.cfg.autoscaling)
    for alarm in alarms.values():
        topic = "PagingTopic" if alarm["Properties"]["MetricName"] in PAGING else "TicketsTopic"
        (action,) = alarm["Properties"]["AlarmActions"]
        assert action["Ref"].startswith(topic)
        assert alarm["Properties"]["OKActions"] == [action]
        assert rule in alarm["DependsOn"]


def test_a_variant_without_autoscaling_has_no_failed_or_refused_scaling_alarm() -> None:
    """A construct of its own (staging's canary is not autoscaled): a stack with only the watch."""
    stack = cdk.Stack(cdk.App(), "Watch")
    key = kms.Key(stack, "Key")
    CapacityWatch(
        stack,
        "CapacityWatch",
        endpoint_name="ep",
        variant_names=["primary", "canary"],
        scaled_variant_names=["primary"],
        encryption_key=key,
        starts_after=key,
        provisioning_minutes=4,
    )
    alarms = _watch_alarms(Template.from_stack(stack))
    names = sorted(
        a["Properties"]["MetricName"] + " " + a["Properties"]["Dimensions"][1]["Value"] for a in alarms.values()
    )
    assert names == [
        f"{FAILED_ACTIVITIES} primary",
        f"{INSTANCES_SHORT} canary",
        f"{INSTANCES_SHORT} primary",
        f"{SCALE_OUT_REFUSED} primary",
    ]
