"""The endpoint config (variants, data capture) and the endpoint with its blue/green policy."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker

from constructs import Construct
from constructs.capture_bucket import CaptureBucket
from constructs.nag import acknowledge

Endpoint = sagemaker.CfnEndpoint
EndpointConfig = sagemaker.CfnEndpointConfig


@dataclass(frozen=True)
class PrefixAwareRouting:
    """PrefixAwareRoutingConfig: both fields are required with PREFIX_AWARE (botocore)."""

    prefix_length: int  # bytes of the InvokeEndpoint body that must match (1024-65536)
    concurrency_threshold: int  # requests in flight on an instance before a matching request goes elsewhere (1-1024)


@dataclass(frozen=True)
class ProductionVariantProps:
    """One production variant (CloudFormation `ProductionVariant`; aws-sagemaker-alpha's
    `InstanceProductionVariantProps`). Unset optional fields are left out: SageMaker's default applies."""

    variant_name: str
    model_name: str
    # Preferred first. More than one: InstancePools, priority 1..n in this order, and no InstanceType
    # ("You replace the InstanceType parameter ... with an InstancePools list", SageMaker guide,
    # realtime-endpoints-heterogeneous). One model serves every pool (no ModelNameOverride).
    instance_types: tuple[str, ...]
    initial_instance_count: int = 1
    initial_variant_weight: float = 1.0
    # The host AMI (NVIDIA driver): SageMaker's default AMI for ml.g5 has driver 470 / CUDA 11.4.
    inference_ami_version: str | None = None
    container_startup_health_check_timeout_seconds: int | None = None  # 60-3600
    model_data_download_timeout_seconds: int | None = None  # 60-3600
    volume_size_gb: int | None = None  # leave out on local-NVMe types
    # Total time SageMaker tries the pools on insufficient capacity (botocore: 300-3600 s).
    instance_provision_timeout_seconds: int | None = None
    routing_strategy: str | None = None  # RoutingConfig.RoutingStrategy; None: no RoutingConfig (RANDOM)
    prefix_aware: PrefixAwareRouting | None = None  # with PREFIX_AWARE only


@dataclass(frozen=True)
class TrafficStep:
    """CapacitySize of a canary or a linear step."""

    type: str  # INSTANCE_COUNT | CAPACITY_PERCENT
    value: int


@dataclass(frozen=True)
class BlueGreenProps:
    """DeploymentConfig.BlueGreenUpdatePolicy."""

    traffic_routing: str = "ALL_AT_ONCE"  # ALL_AT_ONCE | CANARY | LINEAR
    step: TrafficStep | None = None  # the canary size or the linear step; ignored with ALL_AT_ONCE
    wait_interval_seconds: int = 0  # the bake time of each step (0-3600)
    termination_wait_seconds: int | None = None  # 0-3600; None: SageMaker's default
    maximum_execution_timeout_seconds: int | None = None  # 600-28800, more than the waits added up


@dataclass(frozen=True)
class EndpointMetricsProps:
    """EndpointConfig.MetricsConfig, every field written: left out, EnableDetailedObservability is True
    for a new endpoint config and SageMaker would scrape vLLM's whole /metrics on 8080 into CloudWatch
    (botocore sagemaker model, MetricsConfig)."""

    enhanced_metrics: bool = False  # per-instance (InstanceId) dimensions
    detailed_observability: bool = False
    publish_frequency_seconds: int = 60  # 10 | 30 | 60


@dataclass(frozen=True)
class EndpointCaptureProps:
    """DataCaptureConfig: a share of requests written to `bucket` under its own KMS key."""

    bucket: CaptureBucket
    sampling_percentage: int
    # CaptureMode values. Input and Output as two options, as SageMaker's guide "Capture data from real-time
    # endpoint" writes both; the model's third value, InputAndOutput, is not described for real-time endpoints.
    modes: tuple[str, ...] = ("Input",)


@dataclass(frozen=True)
class InferenceEndpointProps:
    endpoint_name: str  # clients invoke the endpoint by name; the rollback alarms need it before it exists
    variants: tuple[ProductionVariantProps, ...]
    blue_green: BlueGreenProps = BlueGreenProps()
    rollback_alarms: tuple[cloudwatch.IAlarm, ...] = ()  # AutoRollbackConfiguration: 1-10 alarms
    metrics: EndpointMetricsProps = EndpointMetricsProps()
    # None: no KmsKeyId, which does not apply to local-NVMe storage (acknowledged as such).
    kms_key_arn: str | None = None
    capture: EndpointCaptureProps | None = None
    # False (`make deploy VARIANTS_CHANGED=1`): no deployment config and no retained variant properties.
    guarded: bool = True


class InferenceEndpoint(Construct):
    """Variants from props; updates go blue/green and roll back when a rollback alarm fires.

    The endpoint config name is generated (its properties are create-only, so every change
    replaces it); the endpoint name is given because clients invoke it by name and the
    rollback alarms need it before the endpoint exists.

    `guarded=False` (`make deploy VARIANTS_CHANGED=1`) leaves the deployment config and the retained
    variant properties out for one update: the guardrails refuse a changed set of variant names
    (deployment-guardrails-exclusions), so SageMaker then shifts all traffic at once, without bake or
    automatic rollback, and the variants start at the config's counts and weights.
    """

    def __init__(self, scope: Construct, id: str, props: InferenceEndpointProps) -> None:
        super().__init__(scope, id)
        self.config = EndpointConfig(
            self,
            "Config",
            production_variants=[_variant(v) for v in props.variants],
            kms_key_id=props.kms_key_arn,
            data_capture_config=_data_capture(props.capture),
            metrics_config=_metrics(props.metrics),
        )
        if props.kms_key_arn is None:
            acknowledge(
                self.config,
                "NIST.800.53.R5::NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured",
                "The variants run on instance types with local NVMe storage, which SageMaker encrypts with a "
                "hardware key; KmsKeyId does not apply to it and config validation refuses it there",
            )
        guarded = props.guarded
        self.endpoint = Endpoint(
            self,
            "Endpoint",
            endpoint_name=props.endpoint_name,
            endpoint_config_name=self.config.attr_endpoint_config_name,
            # Keep the instance counts and weights autoscaling and `ops shift` have set.
            retain_all_variant_properties=guarded,
            deployment_config=Endpoint.DeploymentConfigProperty(
                blue_green_update_policy=_blue_green(props.blue_green),
                auto_rollback_configuration=Endpoint.AutoRollbackConfigProperty(
                    alarms=[Endpoint.AlarmProperty(alarm_name=a.alarm_name) for a in props.rollback_alarms]
                ),
            )
            if guarded
            else None,
        )
        self.endpoint_name = props.endpoint_name
        self.variant_names = [v.variant_name for v in props.variants]


def _variant(v: ProductionVariantProps) -> EndpointConfig.ProductionVariantProperty:
    """One production variant; with more than one type, InstancePools (priority 1 = the preferred type)."""
    pools = None
    if len(v.instance_types) > 1:
        pools = [
            EndpointConfig.InstancePoolProperty(instance_type=instance_type, priority=priority)
            for priority, instance_type in enumerate(v.instance_types, start=1)
        ]
    return EndpointConfig.ProductionVariantProperty(
        variant_name=v.variant_name,
        model_name=v.model_name,
        instance_type=None if pools else v.instance_types[0],
        instance_pools=pools,
        variant_instance_provision_timeout_in_seconds=v.instance_provision_timeout_seconds,
        initial_instance_count=v.initial_instance_count,
        initial_variant_weight=v.initial_variant_weight,
        container_startup_health_check_timeout_in_seconds=v.container_startup_health_check_timeout_seconds,
        model_data_download_timeout_in_seconds=v.model_data_download_timeout_seconds,
        volume_size_in_gb=v.volume_size_gb,
        inference_ami_version=v.inference_ami_version,
        routing_config=_routing(v),
    )


def _metrics(m: EndpointMetricsProps) -> EndpointConfig.MetricsConfigProperty:
    """Like every endpoint-config property, a change replaces the config: a blue/green deployment
    (docs/explanation/platform-notes.md "Endpoint metrics and a sick instance")."""
    return EndpointConfig.MetricsConfigProperty(
        enable_enhanced_metrics=m.enhanced_metrics,
        enable_detailed_observability=m.detailed_observability,
        metric_publish_frequency_in_seconds=m.publish_frequency_seconds,
    )


def _blue_green(d: BlueGreenProps) -> Endpoint.BlueGreenUpdatePolicyProperty:
    step = (
        Endpoint.CapacitySizeProperty(type=d.step.type, value=d.step.value)
        if d.step is not None and d.traffic_routing != "ALL_AT_ONCE"
        else None
    )
    return Endpoint.BlueGreenUpdatePolicyProperty(
        traffic_routing_configuration=Endpoint.TrafficRoutingConfigProperty(
            type=d.traffic_routing,
            wait_interval_in_seconds=d.wait_interval_seconds,
            canary_size=step if d.traffic_routing == "CANARY" else None,
            linear_step_size=step if d.traffic_routing == "LINEAR" else None,
        ),
        termination_wait_in_seconds=d.termination_wait_seconds,
        maximum_execution_timeout_in_seconds=d.maximum_execution_timeout_seconds,
    )


def _data_capture(capture: EndpointCaptureProps | None) -> EndpointConfig.DataCaptureConfigProperty | None:
    if capture is None:
        return None
    return EndpointConfig.DataCaptureConfigProperty(
        enable_capture=True,
        initial_sampling_percentage=capture.sampling_percentage,
        destination_s3_uri=capture.bucket.destination_uri,
        kms_key_id=capture.bucket.encryption_key.key_arn,
        capture_options=[EndpointConfig.CaptureOptionProperty(capture_mode=mode) for mode in capture.modes],
        capture_content_type_header=EndpointConfig.CaptureContentTypeHeaderProperty(
            json_content_types=["application/json"]
        ),
    )


def _routing(v: ProductionVariantProps) -> EndpointConfig.RoutingConfigProperty | None:
    """RoutingConfig; with PREFIX_AWARE its PrefixAwareRoutingConfig. A change of either replaces the
    endpoint config: a blue/green deployment (`make review` says so)."""
    if v.routing_strategy is None:
        return None
    prefix_aware = None
    if v.prefix_aware is not None:
        prefix_aware = EndpointConfig.PrefixAwareRoutingConfigProperty(
            prefix_length=v.prefix_aware.prefix_length, concurrency_threshold=v.prefix_aware.concurrency_threshold
        )
    return EndpointConfig.RoutingConfigProperty(
        routing_strategy=v.routing_strategy, prefix_aware_routing_config=prefix_aware
    )
