"""Issue 3 in the prod template: scaling policies, schedules, alarms, topic and dashboard."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Capture, Match, Template

from config.metric_names import HIGH_RESOLUTION
from config.schema import VariantScaling
from constructs.variant_autoscaling import VariantAutoscaling
from constructs.variant_metrics import VariantMetrics
from container.serving import contract
from stacks.serving_props import scaling_props


@pytest.fixture(scope="module")
def steps() -> Template:
    """Engine step scaling as staging and older configs use it (prod has none since issue 31), synthesised once."""
    stack = cdk.Stack(cdk.App(), "Steps")
    endpoint = cdk.CfnResource(stack, "Endpoint", type="AWS::SNS::Topic")
    scaling = VariantScaling(
        min_capacity=2,
        max_capacity=8,
        target_tracking={"target_value": 190},
        step_scaling=[
            {"metric": contract.METRIC_QUEUE_DEPTH, "scale_out": [
                {"at_or_above": 50, "add_instances": 1}, {"at_or_above": 100, "add_instances": 2},
                {"at_or_above": 200, "add_instances": 4}]},
            {"metric": contract.METRIC_RUNNING_SEQUENCES, "scale_out": [{"at_or_above": 110, "add_instances": 1}]},
        ],
    )  # fmt: skip
    VariantAutoscaling(stack, "Scaling", scaling_props(scaling, 190, VariantMetrics("ep", "primary"), endpoint))
    return Template.from_stack(stack)


def test_scalable_targets_per_variant_depend_on_the_endpoint(prod) -> None:
    targets = prod.serving.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    by_resource = {t["Properties"]["ResourceId"]: t for t in targets.values()}
    primary = by_resource["endpoint/mangaassist-llm-prod/variant/primary"]
    assert (primary["Properties"]["MinCapacity"], primary["Properties"]["MaxCapacity"]) == (2, 103)
    assert "endpoint/mangaassist-llm-prod/variant/canary" in by_resource
    (endpoint_id,) = prod.serving.find_resources("AWS::SageMaker::Endpoint")
    for target in targets.values():
        assert endpoint_id in target["DependsOn"]
        assert "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint" in json.dumps(
            target["Properties"]["RoleARN"]
        )


def test_high_resolution_target_tracking_derived_from_the_capacity(prod) -> None:
    """Issues 31 and 42: target_share_of_concurrency x the concurrent sequences of the variant's pool type that
    saturates first (planning.capacity), both variants; read from prod's config, which the tuner re-sizes."""
    policies = prod.serving.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy", {"Properties": {"PolicyType": "TargetTrackingScaling"}}
    )
    configs = {
        p["Properties"]["ScalingTargetId"]["Ref"]: p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        for p in policies.values()
    }
    targets = prod.serving.find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
    variant_of = {k: t["Properties"]["ResourceId"].rsplit("/", 1)[1] for k, t in targets.items()}
    assert sorted(variant_of[k] for k in configs) == ["canary", "primary"]
    for target_id, config in configs.items():
        name = variant_of[target_id]
        tracking = prod.cfg.autoscaling[name].target_tracking
        assert tracking.metric == HIGH_RESOLUTION and tracking.target_value is None
        saturating = min(
            prod.cfg.planning.capacity[t].concurrent_sequences
            for t in prod.cfg.variant(name).instance_types
            if t in prod.cfg.planning.capacity
        )
        assert config == {
            "PredefinedMetricSpecification": {"PredefinedMetricType": HIGH_RESOLUTION},
            "TargetValue": round(tracking.target_share_of_concurrency * saturating, 2),
            "ScaleOutCooldown": tracking.scale_out_cooldown_seconds,
            "ScaleInCooldown": tracking.scale_in_cooldown_seconds,
        }


def test_step_scaling_on_the_queue_depth_the_image_publishes(steps: Template) -> None:
    steps.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "StepScaling",
            "StepScalingPolicyConfiguration": Match.object_like(
                {"StepAdjustments": Match.array_with([Match.object_like({"ScalingAdjustment": 4})])}
            ),
        },
    )
    steps.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": contract.METRIC_NAMESPACE,
            "MetricName": contract.METRIC_QUEUE_DEPTH,
            "Threshold": 50,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": 1,
            "AlarmActions": [Match.object_like({"Ref": Match.string_like_regexp("QueueDepthScaleOutUpperPolicy")})],
        },
    )


def test_scheduled_peaks_use_iana_time_zones(prod) -> None:
    actions = Capture()
    prod.serving.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"ResourceId": "endpoint/mangaassist-llm-prod/variant/primary", "ScheduledActions": actions},
    )
    by_name = {a["ScheduledActionName"]: a for a in actions.as_array()}
    primary = prod.cfg.autoscaling["primary"]
    evening = next(s for s in primary.schedules if s.name == "tokyo-evening-peak")
    assert by_name["tokyo-evening-peak-start"]["Timezone"] == "Asia/Tokyo"
    assert by_name["tokyo-evening-peak-start"]["Schedule"] == evening.start
    assert by_name["tokyo-evening-peak-start"]["ScalableTargetAction"] == {
        "MinCapacity": evening.min_capacity,
        "MaxCapacity": evening.max_capacity,
    }
    assert by_name["tokyo-evening-peak-end"]["ScalableTargetAction"] == {
        "MinCapacity": primary.min_capacity,
        "MaxCapacity": primary.max_capacity,
    }
    assert by_name["us-eastern-evening-peak-start"]["Timezone"] == "America/New_York"
    friday = next(s for s in primary.schedules if s.name == "tokyo-friday-release")
    assert by_name["tokyo-friday-release-start"]["Timezone"] == "Asia/Tokyo"
    assert by_name["tokyo-friday-release-start"]["Schedule"] == friday.start
    assert by_name["tokyo-friday-release-end"]["Schedule"] == friday.end
    assert all(name.endswith(("-start", "-end")) for name in by_name)
    assert len(by_name) == 10  # five windows, each with a return


def test_every_alarm_notifies_one_of_the_two_encrypted_topics(prod) -> None:
    topics = prod.serving.find_resources("AWS::SNS::Topic")
    assert len(topics) == 2 and all("KmsMasterKeyId" in t["Properties"] for t in topics.values())
    prod.serving.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )
    alarms = prod.serving.find_resources("AWS::CloudWatch::Alarm")
    own = {k: a for k, a in alarms.items() if "Autoscaling" not in k}  # scaling alarms trigger policies
    # per variant: 4 rollback (incl. TTFT p95 and the broken release), 5 platform, 4 engine, 2 admission
    # (shedding, shed share), the capacity ceiling, pinned in a peak (issue 52), the capacity watch's
    # instances-short, scaling-failed and scale-out-refused, and the instance outlier (prod has enhanced metrics)
    assert len(own) == 2 * (17 + 3 + 1)
    for alarm in own.values():
        (action,) = alarm["Properties"]["AlarmActions"]
        assert action["Ref"] in topics
        assert alarm["Properties"]["OKActions"] == [action]


def test_canary_rollback_alarms_are_the_ones_the_endpoint_watches(prod) -> None:
    rollback = Capture()
    prod.serving.has_resource_properties(
        "AWS::SageMaker::Endpoint",
        {"DeploymentConfig": Match.object_like({"AutoRollbackConfiguration": {"Alarms": rollback}})},
    )
    ids = [a["AlarmName"]["Ref"] for a in rollback.as_array()]
    assert len(ids) == 8 and len(ids) <= 10
    alarms = prod.serving.find_resources("AWS::CloudWatch::Alarm")
    canary = [alarms[i]["Properties"]["AlarmDescription"] for i in ids if i.startswith("Alarmscanary")]
    assert len(canary) == 4  # 5XX rate, TTFT p95, broken release, engine silent
    assert all("rolls back a blue/green deployment" in d for d in canary)


def test_silence_from_the_engine_is_not_healthy_once_instances_are_in_service(prod) -> None:
    """Issue 39 item 5: engine silence counts only while the capacity watch (which starts after the
    endpoint's first InService) counts instances in service: a first create pages nobody."""
    alarms = prod.serving.find_resources("AWS::CloudWatch::Alarm")
    silent = [a["Properties"] for k, a in alarms.items() if "enginesilent" in k]
    assert len(silent) == len(prod.cfg.variants)
    for alarm in silent:
        stats = {m["Id"]: m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m}
        names = {s["Metric"]["MetricName"]: (i, s["Stat"]) for i, s in stats.items()}
        samples, in_service = names[contract.METRIC_QUEUE_DEPTH][0], names["InstancesInService"][0]
        assert names[contract.METRIC_QUEUE_DEPTH][1] == "SampleCount"
        (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
        assert expression == f"IF(FILL({in_service}, 0) > 0, FILL({samples}, 0), 1)"
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "LessThanThreshold")
        assert alarm["TreatMissingData"] == "notBreaching"  # no data at all: never InService yet
    (watch_rule,) = prod.serving.find_resources("AWS::Events::Rule").values()
    assert any(d.startswith("Endpoint") for d in watch_rule["DependsOn"])  # the watch starts after the endpoint


def test_engine_alarms_from_the_seeds(prod) -> None:
    for metric, threshold, periods, comparison in (
        (contract.METRIC_QUEUE_DEPTH, 80, 2, "GreaterThanThreshold"),
        (contract.METRIC_KV_CACHE_USAGE, 95, 5, "GreaterThanThreshold"),
        (contract.METRIC_OOM_ERRORS, 0, 1, "GreaterThanThreshold"),
        (contract.METRIC_PREFIX_CACHE_HIT_RATE, 50, 1, "LessThanThreshold"),
    ):
        prod.serving.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "MetricName": metric,
                "Threshold": threshold,
                "EvaluationPeriods": periods,
                "ComparisonOperator": comparison,
            },
        )


def test_dashboard_and_its_name_output(prod) -> None:
    dashboards = prod.serving.find_resources("AWS::CloudWatch::Dashboard")
    assert len(dashboards) == 1
    body = json.dumps(dashboards)
    for needle in (
        "Time to first token p50 / p95 / p99",
        "Time per output token p95",
        "Queue depth",
        "KV cache",
        "Prefix-cache",
        "GPU utilisation",
        "Instances per variant",
        "alarm",
    ):
        assert needle in body
    assert "DashboardName" in prod.serving.find_outputs("*")


def test_metric_names_in_the_template_are_the_ones_the_image_emits(prod) -> None:
    """Alarms, scaling alarms and dashboard: every custom metric they use is in the shared contract."""
    template = json.dumps(prod.serving.to_json())
    used = set()
    for alarm in prod.serving.find_resources("AWS::CloudWatch::Alarm").values():
        if alarm["Properties"].get("Namespace") == contract.METRIC_NAMESPACE:
            used.add(alarm["Properties"]["MetricName"])
    assert used and used <= set(contract.VARIANT_METRICS)
    assert contract.METRIC_NAMESPACE in template  # dashboard widgets reference it too
    for name in contract.VARIANT_METRICS:
        if f'\\"{contract.METRIC_NAMESPACE}\\",\\"{name}\\"' in template:
            used.add(name)
    assert {contract.METRIC_RUNNING_SEQUENCES, contract.METRIC_ENGINE_QUEUE_TIME_P95} <= used


def test_dashboard_graphs_first_token_percentiles_and_time_per_token_per_variant(prod) -> None:
    (dashboard,) = prod.serving.find_resources("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = json.loads("".join(part if isinstance(part, str) else "token" for part in parts))  # tokens: alarm ARNs
    lines = set()  # (metric name, variant, statistic) of every graphed line
    for widget in body["widgets"]:
        for metric in widget.get("properties", {}).get("metrics", []):
            if "VariantName" in metric:
                options = metric[-1] if isinstance(metric[-1], dict) else {}
                lines.add((metric[1], metric[metric.index("VariantName") + 1], options.get("stat")))
    for variant in ("primary", "canary"):
        for stat in ("p50", "p95", "p99"):
            assert (contract.METRIC_TIME_TO_FIRST_TOKEN, variant, stat) in lines
        assert (contract.METRIC_TIME_PER_OUTPUT_TOKEN, variant, "p95") in lines
        # Issue 41: the admission row (shed count, their projected wait; the share is a math expression).
        assert (contract.METRIC_SHED_REQUESTS, variant, "Sum") in lines
        assert (contract.METRIC_SHED_PROJECTED_WAIT, variant, "p95") in lines
    assert "Shed share % of invocations" in json.dumps(body)


def step_adjustments(template) -> list[int]:
    policies = template.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy", {"Properties": {"PolicyType": "StepScaling"}}
    )
    return [
        step["ScalingAdjustment"]
        for policy in policies.values()
        for step in policy["Properties"]["StepScalingPolicyConfiguration"]["StepAdjustments"]
    ]


def test_prod_scales_on_target_tracking_alone(prod) -> None:
    """prod.yaml: with the high-resolution target the step policies never changed the plan, so none remain."""
    assert step_adjustments(prod.serving) == []


def test_steps_only_scale_out_unless_asked(steps: Template) -> None:
    adjustments = step_adjustments(steps)
    assert adjustments and min(adjustments) >= 0


def test_optional_step_scale_in_removes_one_instance_after_quiet_minutes() -> None:
    stack = cdk.Stack(cdk.App(), "ScaleIn")
    endpoint = cdk.CfnResource(stack, "Endpoint", type="AWS::SNS::Topic")
    scaling = VariantScaling(
        min_capacity=1,
        max_capacity=4,
        target_tracking={"target_value": 840},
        step_scaling=[{"metric": "QueueDepth", "scale_out": [{"at_or_above": 50, "add_instances": 1}],
                       "scale_in_below": 5, "cooldown_seconds": 60}],
    )  # fmt: skip
    VariantAutoscaling(stack, "Scaling", scaling_props(scaling, 840, VariantMetrics("ep", "primary"), endpoint))
    template = Template.from_stack(stack)
    assert sorted(step_adjustments(template)) == [-1, 1]  # CDK drops the no-change intervals
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"StepScalingPolicyConfiguration": Match.object_like({"Cooldown": 300, "StepAdjustments": Match.array_with(
            [{"MetricIntervalUpperBound": 0, "ScalingAdjustment": -1}])})},
    )  # fmt: skip
    template.has_resource_properties("AWS::CloudWatch::Alarm", {"Threshold": 5, "EvaluationPeriods": 5})
