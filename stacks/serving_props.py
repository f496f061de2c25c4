"""Config into the serving constructs' props: each construct takes the values it uses, and only this module
(with the stacks) reads `EnvironmentConfig` for them. Derived figures (routing thresholds, pool spreads,
the capacity ceiling) are computed here from config's own helpers, once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs

from config import environment_label
from config.alerting import placeholders
from config.blue_green_timeout import execution_timeout
from config.capacity_evidence import assumed_types
from config.container_env import container_environment
from config.gpu_memory import gpu_memory_alarm_percent
from config.metric_names import HIGH_RESOLUTION
from config.routing import prefix_aware_settings
from config.scaling_target import ceiling_load, tracking_target
from config.schema import (
    AlarmDestination,
    Catalog,
    DataCapture,
    EngineStepScaling,
    EnvironmentConfig,
    InstanceType,
    Variant,
    VariantScaling,
)
from constructs import IDependable
from constructs.alarm_topic import AlarmTopicProps
from constructs.capture_bucket import CaptureBucket
from constructs.deploy_guards import DeployGuardsProps
from constructs.image_repository import ImageRepository
from constructs.inference_endpoint import (
    BlueGreenProps,
    EndpointCaptureProps,
    EndpointMetricsProps,
    InferenceEndpointProps,
    PrefixAwareRouting,
    ProductionVariantProps,
    TrafficStep,
)
from constructs.instance_outlier import InstanceOutlier, InstanceOutlierProps
from constructs.serving_alarms import AlarmedVariant, AlarmThresholds, CeilingLoad, ServingAlarms, ServingAlarmsProps
from constructs.serving_dashboard import ScheduledMinimum, ServingDashboardProps, VariantCapacity
from constructs.serving_model import ModelProps, ServingModelsProps
from constructs.variant_autoscaling import (
    ScaleOutStep,
    ScheduledRangeProps,
    StepScaleIn,
    StepScalingProps,
    TargetTrackingProps,
    VariantAutoscalingProps,
)
from constructs.variant_metrics import VariantMetrics

# data_capture.capture_options -> DataCaptureConfig.CaptureOptions[].CaptureMode
CAPTURE_MODES = {"input": ("Input",), "output": ("Output",), "both": ("Input", "Output")}
# container.log_retention_days -> the log group's retention
LOG_RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
}


def guards_props(cfg: EnvironmentConfig) -> DeployGuardsProps:
    """Production only: make deploy's refusals (assumed capacity, a paging placeholder) in the template."""
    if not cfg.production:
        return DeployGuardsProps(cfg.name, environment_label(cfg.name))
    return DeployGuardsProps(
        env_name=cfg.name,
        config_file=environment_label(cfg.name),
        assumed_types=tuple(pool.instance_type for pool in assumed_types(cfg)),
        paging_placeholders=tuple(placeholders(cfg.alarms.paging)),
    )


def models_props(cfg: EnvironmentConfig, image: ImageRepository, encryption_key: kms.IKey) -> ServingModelsProps:
    return ServingModelsProps(
        endpoint_name=cfg.endpoint_name,
        image=image,
        encryption_key=encryption_key,
        models=tuple(model_props(cfg, v, image) for v in cfg.variants),
        log_retention=LOG_RETENTION[cfg.container.log_retention_days],
        model_data_kms_key_arn=cfg.model_data_kms_key_arn,
    )


def model_props(cfg: EnvironmentConfig, v: Variant, image: ImageRepository) -> ModelProps:
    """The container's environment names the image it runs: `source` resolved to this tree's build tag."""
    built = v.model_copy(update={"image_tag": image.resolve_tag(v.image_tag)})
    return ModelProps(v.name, built.image_tag, v.model_data_s3_uri, container_environment(cfg, built))


def topic_props(destination: AlarmDestination, key: kms.IKey, display_name: str) -> AlarmTopicProps:
    return AlarmTopicProps(
        encryption_key=key,
        display_name=display_name,
        emails=tuple(destination.emails),
        https_endpoints=tuple(destination.https_endpoints),
        existing_topic_arn=destination.topic_arn,
    )


def alarms_props(cfg: EnvironmentConfig, catalog: Catalog) -> ServingAlarmsProps:
    """The CPU alarm's threshold scales with vCPUs (SageMaker sums CPUUtilization over them); the GPU-memory
    alarm sits above what a healthy instance reads (config/gpu_memory.py). A variant with instance pools may
    mix types; its alarms use the preferred type's (priority 1) figures."""
    return ServingAlarmsProps(
        endpoint_name=cfg.endpoint_name,
        variants=tuple(alarmed_variant(cfg, v, catalog.instance_types[v.instance_type]) for v in cfg.variants),
        # AlarmThresholds names config's `alarms` fields one for one.
        thresholds=AlarmThresholds(**{f.name: getattr(cfg.alarms, f.name) for f in fields(AlarmThresholds)}),
        admission_deadline_ms=cfg.admission_deadline_ms,
        metrics_interval_seconds=cfg.container.metrics_interval_seconds,
    )


def alarmed_variant(cfg: EnvironmentConfig, v: Variant, preferred: InstanceType) -> AlarmedVariant:
    return AlarmedVariant(
        v.name,
        preferred.vcpus,
        gpu_memory_alarm_percent(cfg, preferred),
        capacity_ceiling(cfg, v.name),
        pinned_target(cfg, v.name),
    )


def pinned_target(cfg: EnvironmentConfig, variant_name: str) -> float | None:
    """The tracking target the pinned-in-peak alarm compares with: only on the high-resolution concurrency metric."""
    scaling = cfg.autoscaling.get(variant_name)
    if scaling is None or scaling.target_tracking.metric != HIGH_RESOLUTION:
        return None
    return tracking_target(cfg, variant_name)


def capacity_ceiling(cfg: EnvironmentConfig, variant_name: str) -> CeilingLoad | None:
    """An autoscaled variant's ceiling load; None without autoscaling or a planning.capacity figure."""
    found = ceiling_load(cfg, variant_name) if variant_name in cfg.autoscaling else None
    return CeilingLoad(*found) if found is not None else None


def endpoint_props(
    cfg: EnvironmentConfig,
    *,
    model_names: Mapping[str, str],
    rollback_alarms: Sequence[cloudwatch.IAlarm],
    capture: CaptureBucket | None,
    guarded: bool,
) -> InferenceEndpointProps:
    m = cfg.endpoint_metrics
    return InferenceEndpointProps(
        endpoint_name=cfg.endpoint_name,
        variants=tuple(production_variant(cfg, v, model_names[v.name]) for v in cfg.variants),
        blue_green=blue_green(cfg),
        rollback_alarms=tuple(rollback_alarms),
        metrics=EndpointMetricsProps(m.enhanced_metrics, m.detailed_observability, m.publish_frequency_seconds),
        kms_key_arn=cfg.endpoint_kms_key_arn,  # None on local-NVMe types (config.checks)
        capture=capture_props(cfg.data_capture, capture) if capture is not None else None,
        guarded=guarded,
    )


def production_variant(cfg: EnvironmentConfig, v: Variant, model_name: str) -> ProductionVariantProps:
    settings = prefix_aware_settings(cfg, v)
    startup = cfg.container.startup_health_check_timeout_seconds
    return ProductionVariantProps(
        variant_name=v.name,
        model_name=model_name,
        instance_types=tuple(v.instance_types),
        initial_instance_count=v.initial_instance_count,
        initial_variant_weight=v.initial_weight,
        # The host driver must run the image's CUDA (config.checks.platform). One AMI serves every pool.
        inference_ami_version=v.inference_ami_version,
        container_startup_health_check_timeout_seconds=startup,
        model_data_download_timeout_seconds=startup,
        volume_size_gb=v.volume_size_gb,  # None on local-NVMe types (config.checks)
        instance_provision_timeout_seconds=v.instance_provision_timeout_seconds,
        routing_strategy=cfg.routing_strategy,
        prefix_aware=PrefixAwareRouting(settings.prefix_length, settings.concurrency_threshold) if settings else None,
    )


def blue_green(cfg: EnvironmentConfig) -> BlueGreenProps:
    d = cfg.deployment
    return BlueGreenProps(
        traffic_routing=d.traffic_routing,
        step=TrafficStep(d.step_size.type, d.step_size.value) if d.step_size is not None else None,
        wait_interval_seconds=d.wait_interval_seconds,
        termination_wait_seconds=d.termination_wait_seconds,
        maximum_execution_timeout_seconds=execution_timeout(cfg),  # derived from its parts by default
    )


def capture_props(capture: DataCapture, bucket: CaptureBucket) -> EndpointCaptureProps:
    return EndpointCaptureProps(bucket, capture.sampling_percentage, CAPTURE_MODES[capture.capture_options])


def outlier_props(cfg: EnvironmentConfig) -> InstanceOutlierProps:
    """Every variant; none (no alarm, no rows) without enhanced metrics, which alone give the InstanceId
    dimension."""
    m = cfg.endpoint_metrics
    return InstanceOutlierProps(
        endpoint_name=cfg.endpoint_name,
        variant_names=tuple(v.name for v in cfg.variants) if m.enhanced_metrics else (),
        latency_ratio=m.outlier_latency_ratio,
        minutes=m.outlier_minutes,
        pool_spread={v.name: capacity_spread(cfg, v.instance_types) for v in cfg.variants},
    )


def capacity_spread(cfg: EnvironmentConfig, instance_types: Sequence[str]) -> float:
    """Strongest over weakest `planning.capacity` among a variant's pool types that have a figure."""
    rates = [cfg.planning.capacity[t].requests_per_minute for t in instance_types if t in cfg.planning.capacity]
    return max(rates) / min(rates) if len(rates) > 1 else 1.0


def autoscaling_props(
    cfg: EnvironmentConfig, variant_name: str, metrics: VariantMetrics, endpoint: IDependable
) -> VariantAutoscalingProps:
    """The target explicit, or derived from planning.capacity (config.scaling_target)."""
    return scaling_props(cfg.autoscaling[variant_name], tracking_target(cfg, variant_name), metrics, endpoint)


def scaling_props(
    scaling: VariantScaling, target_value: float, metrics: VariantMetrics, endpoint: IDependable
) -> VariantAutoscalingProps:
    tracking = scaling.target_tracking
    return VariantAutoscalingProps(
        metrics=metrics,
        endpoint=endpoint,
        min_capacity=scaling.min_capacity,
        max_capacity=scaling.max_capacity,
        target_tracking=TargetTrackingProps(
            tracking.metric, target_value, tracking.scale_out_cooldown_seconds, tracking.scale_in_cooldown_seconds
        ),
        step_scaling=tuple(step_scaling(policy) for policy in scaling.step_scaling),
        schedules=tuple(
            ScheduledRangeProps(w.name, w.timezone, w.start, w.end, w.min_capacity, w.max_capacity)
            for w in scaling.schedules
        ),
    )


def step_scaling(policy: EngineStepScaling) -> StepScalingProps:
    scale_in = None
    if policy.scale_in_below is not None:
        scale_in = StepScaleIn(policy.scale_in_below, policy.scale_in_after_minutes, policy.scale_in_cooldown_seconds)
    return StepScalingProps(
        metric=policy.metric,
        scale_out=tuple(ScaleOutStep(s.at_or_above, s.add_instances) for s in policy.scale_out),
        scale_out_after_minutes=policy.scale_out_after_minutes,
        cooldown_seconds=policy.cooldown_seconds,
        scale_in=scale_in,
    )


def dashboard_props(
    cfg: EnvironmentConfig, alarms: ServingAlarms, instance_outlier: InstanceOutlier
) -> ServingDashboardProps:
    return ServingDashboardProps(
        alarms=alarms,
        max_num_seqs=cfg.engine.max_num_seqs,
        admission_deadline_ms=cfg.admission_deadline_ms,
        capacity={name: variant_capacity(scaling) for name, scaling in cfg.autoscaling.items()},
        instance_pools={v.name: tuple(v.instance_types) for v in cfg.variants if v.fallback_instance_types},
        instance_outlier=instance_outlier,
    )


def variant_capacity(scaling: VariantScaling) -> VariantCapacity:
    windows = tuple(ScheduledMinimum(w.name, w.min_capacity, w.start, w.end, w.timezone) for w in scaling.schedules)
    return VariantCapacity(scaling.min_capacity, scaling.max_capacity, windows)
