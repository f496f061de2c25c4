"""Application Auto Scaling for one production variant: target tracking, engine step scaling, schedules.

The scalable target depends on the endpoint (its ResourceId names the endpoint and variant), so it
is registered after the endpoint exists and deregistered before it is deleted.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack, Tags, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_iam as iam

from config.access import scaling_tags
from config.metric_names import HIGH_RESOLUTION, INVOCATIONS_PER_INSTANCE
from config.schema import EngineStepScaling, ScheduledWindow, VariantScaling
from constructs import Construct, IDependable
from constructs.variant_metrics import VariantMetrics

PREDEFINED = {
    INVOCATIONS_PER_INSTANCE: appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
    HIGH_RESOLUTION: (appscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION),
}


# Application Auto Scaling acts on SageMaker through its service-linked role (created on first use).
SERVICE_LINKED_ROLE = (
    "arn:{stack.partition}:iam::{stack.account}:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
    "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
)


def resource_id(endpoint_name: str, variant_name: str) -> str:
    return f"endpoint/{endpoint_name}/variant/{variant_name}"


class VariantAutoscaling(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        metrics: VariantMetrics,
        scaling: VariantScaling,
        endpoint: IDependable,
        target_value: float | None = None,
    ) -> None:
        """`target_value`: the resolved TargetValue (config.scaling_target.tracking_target), required when the
        config derives it (`target_share_of_concurrency`); default: `scaling.target_tracking.target_value`."""
        super().__init__(scope, id)
        self.scaling = scaling
        self.target = appscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=resource_id(metrics.endpoint_name, metrics.variant_name),
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=scaling.min_capacity,
            max_capacity=scaling.max_capacity,
            role=iam.Role.from_role_arn(self, "ServiceLinkedRole", SERVICE_LINKED_ROLE.format(stack=Stack.of(self))),
        )
        self.target.node.add_dependency(endpoint)
        # The operator policy's Application Auto Scaling writes are conditioned on this tag (aws:ResourceTag):
        # a scalable target's ARN ends in an ID assigned at registration (constructs/operator_policy.py).
        for key, value in scaling_tags(metrics.endpoint_name).items():
            Tags.of(self.target).add(key, value)

        for window in scaling.schedules:
            self._window(window)
        if _fixed(scaling):
            return  # min = max in every window: a scaling policy could never act (issue 50 §7)
        tracking = scaling.target_tracking
        target = target_value if target_value is not None else tracking.target_value
        if target is None:
            raise ValueError(
                f"{id}: target_tracking derives its target (target_share_of_concurrency): pass "
                "target_value=config.scaling_target.tracking_target(cfg, variant)"
            )
        # SageMakerVariantConcurrentRequestsPerModelHighResolution: requests in the container (queued ones
        # included, a stream until its last token) every 10 s; scales out faster, in at the standard speed
        # (docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html).
        self.target.scale_to_track_metric(
            "TargetTracking",
            target_value=target,
            predefined_metric=PREDEFINED[tracking.metric],
            scale_out_cooldown=Duration.seconds(tracking.scale_out_cooldown_seconds),
            scale_in_cooldown=Duration.seconds(tracking.scale_in_cooldown_seconds),
        )
        for policy in scaling.step_scaling:
            self._step_scaling(metrics, policy)

    def _step_scaling(self, metrics: VariantMetrics, policy: EngineStepScaling) -> None:
        """Scale out fast on engine pressure; optionally scale in one instance at a time after a quiet spell."""
        metric = metrics.engine_metric(policy.metric)
        first = policy.scale_out[0].at_or_above
        self.target.scale_on_metric(
            f"{policy.metric}-ScaleOut",
            metric=metric,
            scaling_steps=[
                appscaling.ScalingInterval(upper=first, change=0),
                *(appscaling.ScalingInterval(lower=s.at_or_above, change=s.add_instances) for s in policy.scale_out),
            ],
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            evaluation_periods=policy.scale_out_after_minutes,
            cooldown=Duration.seconds(policy.cooldown_seconds),
        )
        if policy.scale_in_below is None:
            return
        self.target.scale_on_metric(
            f"{policy.metric}-ScaleIn",
            metric=metric,
            scaling_steps=[
                appscaling.ScalingInterval(upper=policy.scale_in_below, change=-1),
                appscaling.ScalingInterval(lower=policy.scale_in_below, change=0),
            ],
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            evaluation_periods=policy.scale_in_after_minutes,
            cooldown=Duration.seconds(policy.scale_in_cooldown_seconds),
        )

    def _window(self, window: ScheduledWindow) -> None:
        zone = TimeZone.of(window.timezone)
        self.target.scale_on_schedule(
            f"{window.name}-start",
            schedule=appscaling.Schedule.expression(window.start),
            time_zone=zone,
            min_capacity=window.min_capacity,
            max_capacity=window.max_capacity or self.scaling.max_capacity,
        )
        self.target.scale_on_schedule(
            f"{window.name}-end",
            schedule=appscaling.Schedule.expression(window.end),
            time_zone=zone,
            min_capacity=self.scaling.min_capacity,
            max_capacity=self.scaling.max_capacity,
        )


def _fixed(scaling: VariantScaling) -> bool:
    """The instance count cannot move: min = max, and no scheduled window opens a range either."""
    ranges = [(scaling.min_capacity, scaling.max_capacity)]
    ranges += [(w.min_capacity, w.max_capacity or scaling.max_capacity) for w in scaling.schedules]
    return all(low == high for low, high in ranges)
