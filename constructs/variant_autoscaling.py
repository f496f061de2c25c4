"""Application Auto Scaling for one production variant: target tracking, engine step scaling, schedules.

The scalable target depends on the endpoint (its ResourceId names the endpoint and variant), so it
is registered after the endpoint exists and deregistered before it is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Stack, Tags, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_iam as iam

from config.access import scaling_tags
from config.metric_names import HIGH_RESOLUTION, INVOCATIONS_PER_INSTANCE
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


@dataclass(frozen=True)
class TargetTrackingProps:
    metric: str  # a key of PREDEFINED: invocations per instance, or concurrent requests (high resolution)
    target_value: float  # resolved: config.scaling_target.tracking_target derives it where config does
    scale_out_cooldown_seconds: int
    scale_in_cooldown_seconds: int


@dataclass(frozen=True)
class ScaleOutStep:
    at_or_above: float  # the metric value where this step starts
    add_instances: int


@dataclass(frozen=True)
class StepScaleIn:
    """One instance at a time once the metric stays below `below` for `after_minutes`."""

    below: float
    after_minutes: int
    cooldown_seconds: int


@dataclass(frozen=True)
class StepScalingProps:
    """Scale out fast on a metric the serving image emits (container/serving/contract.py)."""

    metric: str
    scale_out: tuple[ScaleOutStep, ...]  # at least one, ascending
    scale_out_after_minutes: int
    cooldown_seconds: int
    scale_in: StepScaleIn | None = None  # None: target tracking alone scales in


@dataclass(frozen=True)
class ScheduledRangeProps:
    """Raise the capacity range at `start`, return it to the target's range at `end` (local time)."""

    name: str
    timezone: str  # IANA
    start: str  # cron(...) with six fields
    end: str
    min_capacity: int
    max_capacity: int | None = None  # None: the variant's max_capacity


@dataclass(frozen=True)
class VariantAutoscalingProps:
    metrics: VariantMetrics  # names the endpoint and variant; step scaling reads its engine metrics
    endpoint: IDependable  # the scalable target is registered after it and deregistered before it
    min_capacity: int
    max_capacity: int
    target_tracking: TargetTrackingProps
    step_scaling: tuple[StepScalingProps, ...] = ()
    schedules: tuple[ScheduledRangeProps, ...] = ()


class VariantAutoscaling(Construct):
    def __init__(self, scope: Construct, id: str, props: VariantAutoscalingProps) -> None:
        super().__init__(scope, id)
        self.props = props
        metrics = props.metrics
        self.target = appscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            resource_id=resource_id(metrics.endpoint_name, metrics.variant_name),
            scalable_dimension="sagemaker:variant:DesiredInstanceCount",
            min_capacity=props.min_capacity,
            max_capacity=props.max_capacity,
            role=iam.Role.from_role_arn(self, "ServiceLinkedRole", SERVICE_LINKED_ROLE.format(stack=Stack.of(self))),
        )
        self.target.node.add_dependency(props.endpoint)
        # The operator policy's Application Auto Scaling writes are conditioned on this tag (aws:ResourceTag):
        # a scalable target's ARN ends in an ID assigned at registration (constructs/operator_policy.py).
        for key, value in scaling_tags(metrics.endpoint_name).items():
            Tags.of(self.target).add(key, value)

        for window in props.schedules:
            self._window(window)
        if _fixed(props):
            return  # min = max in every window: a scaling policy could never act (issue 50 §7)
        tracking = props.target_tracking
        # SageMakerVariantConcurrentRequestsPerModelHighResolution: requests in the container (queued ones
        # included, a stream until its last token) every 10 s; scales out faster, in at the standard speed
        # (docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html).
        self.target.scale_to_track_metric(
            "TargetTracking",
            target_value=tracking.target_value,
            predefined_metric=PREDEFINED[tracking.metric],
            scale_out_cooldown=Duration.seconds(tracking.scale_out_cooldown_seconds),
            scale_in_cooldown=Duration.seconds(tracking.scale_in_cooldown_seconds),
        )
        for policy in props.step_scaling:
            self._step_scaling(metrics, policy)

    def _step_scaling(self, metrics: VariantMetrics, policy: StepScalingProps) -> None:
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
        scale_in = policy.scale_in
        if scale_in is None:
            return
        self.target.scale_on_metric(
            f"{policy.metric}-ScaleIn",
            metric=metric,
            scaling_steps=[
                appscaling.ScalingInterval(upper=scale_in.below, change=-1),
                appscaling.ScalingInterval(lower=scale_in.below, change=0),
            ],
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            evaluation_periods=scale_in.after_minutes,
            cooldown=Duration.seconds(scale_in.cooldown_seconds),
        )

    def _window(self, window: ScheduledRangeProps) -> None:
        zone = TimeZone.of(window.timezone)
        self.target.scale_on_schedule(
            f"{window.name}-start",
            schedule=appscaling.Schedule.expression(window.start),
            time_zone=zone,
            min_capacity=window.min_capacity,
            max_capacity=window.max_capacity or self.props.max_capacity,
        )
        self.target.scale_on_schedule(
            f"{window.name}-end",
            schedule=appscaling.Schedule.expression(window.end),
            time_zone=zone,
            min_capacity=self.props.min_capacity,
            max_capacity=self.props.max_capacity,
        )


def _fixed(props: VariantAutoscalingProps) -> bool:
    """The instance count cannot move: min = max, and no scheduled window opens a range either."""
    ranges = [(props.min_capacity, props.max_capacity)]
    ranges += [(w.min_capacity, w.max_capacity or props.max_capacity) for w in props.schedules]
    return all(low == high for low, high in ranges)
