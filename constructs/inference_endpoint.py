"""The endpoint config (variants, data capture) and the endpoint with its blue/green policy."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker

from config.blue_green_timeout import execution_timeout
from config.routing import prefix_aware_settings
from config.schema import EnvironmentConfig, Variant
from constructs import Construct
from constructs.capture_bucket import CaptureBucket
from constructs.nag import acknowledge

Endpoint = sagemaker.CfnEndpoint
EndpointConfig = sagemaker.CfnEndpointConfig
# data_capture.capture_options -> DataCaptureConfig.CaptureOptions[].CaptureMode. Both as two options,
# Input and Output, as SageMaker's guide "Capture data from real-time endpoint" writes it; the model's
# third value, InputAndOutput (botocore CaptureMode enum), is not described for real-time endpoints.
CAPTURE_MODES = {"input": ("Input",), "output": ("Output",), "both": ("Input", "Output")}


class InferenceEndpoint(Construct):
    """Variants from config; updates go blue/green and roll back when a rollback alarm fires.

    The endpoint config name is generated (its properties are create-only, so every change
    replaces it); the endpoint name comes from config because clients invoke it by name and the
    rollback alarms need it before the endpoint exists.

    `guarded=False` (`make deploy VARIANTS_CHANGED=1`) leaves the deployment config and the retained
    variant properties out for one update: the guardrails refuse a changed set of variant names
    (deployment-guardrails-exclusions), so SageMaker then shifts all traffic at once, without bake or
    automatic rollback, and the variants start at the config's counts and weights.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: EnvironmentConfig,
        model_names: dict[str, str],
        rollback_alarms: list[cloudwatch.IAlarm],
        capture: CaptureBucket | None,
        guarded: bool = True,
    ) -> None:
        super().__init__(scope, id)
        self.config = EndpointConfig(
            self,
            "Config",
            production_variants=[self._variant(cfg, v, model_names[v.name]) for v in cfg.variants],
            kms_key_id=cfg.endpoint_kms_key_arn,  # None on local-NVMe types (config.checks)
            data_capture_config=self._data_capture(cfg, capture),
            metrics_config=self._metrics(cfg),
        )
        if cfg.endpoint_kms_key_arn is None:
            acknowledge(
                self.config,
                "NIST.800.53.R5::NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured",
                "The variants run on instance types with local NVMe storage, which SageMaker encrypts with a "
                "hardware key; KmsKeyId does not apply to it and config validation refuses it there",
            )
        self.endpoint = Endpoint(
            self,
            "Endpoint",
            endpoint_name=cfg.endpoint_name,
            endpoint_config_name=self.config.attr_endpoint_config_name,
            # Keep the instance counts and weights autoscaling and `ops shift` have set.
            retain_all_variant_properties=guarded,
            deployment_config=Endpoint.DeploymentConfigProperty(
                blue_green_update_policy=self._blue_green(cfg),
                auto_rollback_configuration=Endpoint.AutoRollbackConfigProperty(
                    alarms=[Endpoint.AlarmProperty(alarm_name=a.alarm_name) for a in rollback_alarms]
                ),
            )
            if guarded
            else None,
        )
        self.endpoint_name = cfg.endpoint_name
        self.variant_names = [v.name for v in cfg.variants]

    @staticmethod
    def _variant(cfg: EnvironmentConfig, v: Variant, model_name: str) -> EndpointConfig.ProductionVariantProperty:
        """One production variant; with fallback types, InstancePools (priority 1 = `instance_type`).

        "You replace the InstanceType parameter in your production variant with an InstancePools
        list" (SageMaker guide, realtime-endpoints-heterogeneous): a variant with pools has no
        InstanceType. One model serves every pool (no ModelNameOverride): config.checks holds each pool
        type to the same VRAM budget and AMI. A variant without fallbacks is emitted as before.
        """
        pools = None
        if v.fallback_instance_types:
            pools = [
                EndpointConfig.InstancePoolProperty(instance_type=instance_type, priority=priority)
                for priority, instance_type in enumerate(v.instance_types, start=1)
            ]
        return EndpointConfig.ProductionVariantProperty(
            variant_name=v.name,
            model_name=model_name,
            instance_type=None if pools else v.instance_type,
            instance_pools=pools,
            # Total time SageMaker tries the pools on insufficient capacity (botocore: 300-3600 s).
            variant_instance_provision_timeout_in_seconds=v.instance_provision_timeout_seconds,
            initial_instance_count=v.initial_instance_count,
            initial_variant_weight=v.initial_weight,
            container_startup_health_check_timeout_in_seconds=cfg.container.startup_health_check_timeout_seconds,
            model_data_download_timeout_in_seconds=cfg.container.startup_health_check_timeout_seconds,
            volume_size_in_gb=v.volume_size_gb,  # None on local-NVMe types (config.checks)
            # The host driver must run the image's CUDA (config.checks.platform); SageMaker's
            # default AMI for ml.g5 has driver 470 / CUDA 11.4. One AMI serves every pool.
            inference_ami_version=v.inference_ami_version,
            routing_config=_routing(cfg, v),
        )

    @staticmethod
    def _metrics(cfg: EnvironmentConfig) -> EndpointConfig.MetricsConfigProperty:
        """Every field explicit: left out, EnableDetailedObservability is True for a new endpoint config
        and SageMaker would scrape vLLM's whole /metrics on 8080 into CloudWatch (botocore sagemaker
        model, MetricsConfig). Like every endpoint-config property, a change replaces the config: a
        blue/green deployment (docs/platform-notes.md "Endpoint metrics and a sick instance")."""
        m = cfg.endpoint_metrics
        return EndpointConfig.MetricsConfigProperty(
            enable_enhanced_metrics=m.enhanced_metrics,
            enable_detailed_observability=m.detailed_observability,
            metric_publish_frequency_in_seconds=m.publish_frequency_seconds,
        )

    @staticmethod
    def _blue_green(cfg: EnvironmentConfig) -> Endpoint.BlueGreenUpdatePolicyProperty:
        d = cfg.deployment
        step = (
            Endpoint.CapacitySizeProperty(type=d.step_size.type, value=d.step_size.value)
            if d.step_size is not None and d.traffic_routing != "ALL_AT_ONCE"
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
            maximum_execution_timeout_in_seconds=execution_timeout(cfg),  # derived from its parts by default
        )

    @staticmethod
    def _data_capture(
        cfg: EnvironmentConfig, capture: CaptureBucket | None
    ) -> EndpointConfig.DataCaptureConfigProperty | None:
        if capture is None:
            return None
        return EndpointConfig.DataCaptureConfigProperty(
            enable_capture=True,
            initial_sampling_percentage=cfg.data_capture.sampling_percentage,
            destination_s3_uri=capture.destination_uri,
            kms_key_id=capture.encryption_key.key_arn,
            capture_options=[
                EndpointConfig.CaptureOptionProperty(capture_mode=mode)
                for mode in CAPTURE_MODES[cfg.data_capture.capture_options]
            ],
            capture_content_type_header=EndpointConfig.CaptureContentTypeHeaderProperty(
                json_content_types=["application/json"]
            ),
        )


def _routing(cfg: EnvironmentConfig, v: Variant) -> EndpointConfig.RoutingConfigProperty:
    """RoutingConfig; with PREFIX_AWARE its PrefixAwareRoutingConfig, both fields required then (botocore).
    A change of either replaces the endpoint config: a blue/green deployment (`make review` says so)."""
    settings = prefix_aware_settings(cfg, v)
    prefix_aware = None
    if settings is not None:
        prefix_aware = EndpointConfig.PrefixAwareRoutingConfigProperty(
            prefix_length=settings.prefix_length, concurrency_threshold=settings.concurrency_threshold
        )
    return EndpointConfig.RoutingConfigProperty(
        routing_strategy=cfg.routing_strategy, prefix_aware_routing_config=prefix_aware
    )
