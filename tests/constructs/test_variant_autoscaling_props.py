"""VariantAutoscaling on its own: a bare stack, target tracking on a resolved figure, then a window. The real
environments' scaling is tested in tests/stacks/test_scaling_and_observability.py."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from config.metric_names import HIGH_RESOLUTION
from constructs.variant_autoscaling import (
    ScheduledRangeProps,
    TargetTrackingProps,
    VariantAutoscaling,
    VariantAutoscalingProps,
)
from constructs.variant_metrics import VariantMetrics

TRACKING = TargetTrackingProps(
    HIGH_RESOLUTION, target_value=7.5, scale_out_cooldown_seconds=60, scale_in_cooldown_seconds=300
)
EVENING = ScheduledRangeProps("evening", "Asia/Tokyo", "cron(0 18 * * ? *)", "cron(0 23 * * ? *)", min_capacity=3)


@pytest.fixture(scope="module")
def template() -> Template:
    stack = cdk.Stack(cdk.App(), "Scaling")
    endpoint = cdk.CfnResource(stack, "Endpoint", type="AWS::SNS::Topic")
    props = VariantAutoscalingProps(
        metrics=VariantMetrics("chat", "primary"),
        endpoint=endpoint,
        min_capacity=1,
        max_capacity=4,
        target_tracking=TRACKING,
        schedules=(EVENING,),
    )
    VariantAutoscaling(stack, "Scaling", props)
    return Template.from_stack(stack)


def test_the_variant_is_a_tagged_scalable_target_registered_after_the_endpoint(template) -> None:
    template.has_resource(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "DependsOn": ["Endpoint"],
            "Properties": Match.object_like(
                {
                    "ResourceId": "endpoint/chat/variant/primary",
                    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                    "MinCapacity": 1,
                    "MaxCapacity": 4,
                }
            ),
        },
    )


def test_target_tracking_tracks_the_value_given(template) -> None:
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": 7.5,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                },
                "ScaleOutCooldown": 60,
                "ScaleInCooldown": 300,
            },
        },
    )
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 1)  # no step scaling unless given


def test_a_window_without_its_own_maximum_raises_the_floor_under_the_variants_maximum(template) -> None:
    (target,) = template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget").values()
    actions = {a["ScheduledActionName"]: a for a in target["Properties"]["ScheduledActions"]}
    start, end = actions["evening-start"], actions["evening-end"]
    assert start["ScalableTargetAction"] == {"MinCapacity": 3, "MaxCapacity": 4}
    assert end["ScalableTargetAction"] == {"MinCapacity": 1, "MaxCapacity": 4}
    assert (start["Schedule"], start["Timezone"]) == ("cron(0 18 * * ? *)", "Asia/Tokyo")


def test_a_count_that_cannot_move_gets_a_target_and_no_policy() -> None:
    stack = cdk.Stack(cdk.App(), "Fixed")
    endpoint = cdk.CfnResource(stack, "Endpoint", type="AWS::SNS::Topic")
    props = VariantAutoscalingProps(VariantMetrics("chat", "canary"), endpoint, 1, 1, TRACKING)
    VariantAutoscaling(stack, "Scaling", props)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 1)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 0)
