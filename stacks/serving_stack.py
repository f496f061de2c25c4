"""The SageMaker endpoint and everything that watches it. Composes constructs; builds nothing itself."""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnOutput, Stack

from config import load_catalog, naming
from config.cost import floor_and_ceiling_usd
from config.scaling_target import tracking_target
from config.schema import Catalog, EnvironmentConfig
from constructs import Construct
from constructs.alarm_topic import AlarmTopic
from constructs.capacity_watch import CapacityWatch
from constructs.capture_bucket import CaptureBucket
from constructs.encryption_key import service_key
from constructs.image_repository import ImageRepository
from constructs.inference_endpoint import InferenceEndpoint
from constructs.operator_policy import OperatorPolicy, operator_scope_for_stack
from constructs.serving_alarms import ServingAlarms
from constructs.serving_dashboard import ServingDashboard
from constructs.serving_model import ServingModels
from constructs.variant_autoscaling import VariantAutoscaling


class ServingStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: EnvironmentConfig,
        image: ImageRepository,
        guarded: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        key = service_key(self, "ServingKey", description=f"{cfg.endpoint_name}: logs, data capture, alarms")
        models = ServingModels(self, "Models", cfg=cfg, image=image, encryption_key=key)

        capture = None
        if cfg.data_capture.enabled:
            capture = CaptureBucket(
                self, "DataCapture", encryption_key=key, retention_days=cfg.data_capture.retention_days
            )
            capture.grant_capture(models.role)

        topic = AlarmTopic(
            self, "Notifications", encryption_key=key, email_subscriptions=cfg.alarms.email_subscriptions
        )
        catalog = load_catalog()
        # The CPU alarm's threshold scales with vCPUs (SageMaker sums CPUUtilization over them). A variant
        # with instance pools may mix types; its alarm uses the preferred type's (priority 1) figure.
        vcpus = {v.name: catalog.instance_types[v.instance_type].vcpus for v in cfg.variants}
        alarms = ServingAlarms(self, "Alarms", cfg=cfg, vcpus=vcpus)
        models.grant_describe_alarms([self._alarm_arn(a.alarm_name) for a in alarms.rollback_alarms])

        endpoint = InferenceEndpoint(
            self,
            "Endpoint",
            cfg=cfg,
            model_names={name: model.attr_model_name for name, model in models.models.items()},
            rollback_alarms=alarms.rollback_alarms,
            capture=capture,
            guarded=guarded,
        )
        watch = CapacityWatch(
            self,
            "CapacityWatch",
            endpoint_name=cfg.endpoint_name,
            variant_names=[v.name for v in cfg.variants],
            scaled_variant_names=list(cfg.autoscaling),
            encryption_key=key,
            starts_after=endpoint.endpoint,
        )
        topic.notify([*alarms.all_alarms, *watch.alarms])

        for variant_name, scaling in cfg.autoscaling.items():
            VariantAutoscaling(
                self,
                f"Autoscaling-{variant_name}",
                metrics=alarms.metrics[variant_name],
                scaling=scaling,
                endpoint=endpoint.endpoint,
                target_value=tracking_target(cfg, variant_name),  # explicit, or derived from planning.capacity
            )

        dashboard = ServingDashboard(self, "Dashboard", cfg=cfg, alarms=alarms)
        OperatorPolicy(
            self,
            "Operator",
            operator_scope=operator_scope_for_stack(
                cfg.name,
                cfg.endpoint_name,
                image.repository.repository_arn,
                capture.bucket.bucket_arn if capture else None,
                key.key_arn,
            ),
            capture_bucket=capture.bucket if capture else None,
        )

        self._outputs(cfg, catalog, dashboard, endpoint, topic, alarms)

    def _outputs(
        self,
        cfg: EnvironmentConfig,
        catalog: Catalog,
        dashboard: ServingDashboard,
        endpoint: InferenceEndpoint,
        topic: AlarmTopic,
        alarms: ServingAlarms,
    ) -> None:
        """What the ops CLI and a reader of `cdk deploy` need: cost range, names, topic, rollback alarms."""
        floor, ceiling = floor_and_ceiling_usd(cfg, catalog)
        CfnOutput(
            self,
            naming.OUTPUT_MONTHLY_COST,
            value=f"{floor:.0f}-{ceiling:.0f}",
            description="On-demand USD per month at the autoscaling floor and ceiling (config/catalog.yaml prices)",
        )
        CfnOutput(self, naming.OUTPUT_DASHBOARD_NAME, value=dashboard.dashboard_name)
        CfnOutput(self, naming.OUTPUT_ENDPOINT_NAME, value=endpoint.endpoint.attr_endpoint_name)
        CfnOutput(self, naming.OUTPUT_ENDPOINT_CONFIG_NAME, value=endpoint.config.attr_endpoint_config_name)
        CfnOutput(self, naming.OUTPUT_ALARM_TOPIC_ARN, value=topic.topic.topic_arn)
        CfnOutput(self, naming.OUTPUT_VARIANT_NAMES, value=",".join(endpoint.variant_names))
        CfnOutput(self, naming.OUTPUT_ROLLBACK_ALARMS, value=",".join(a.alarm_name for a in alarms.rollback_alarms))

    def _alarm_arn(self, alarm_name: str) -> str:
        return self.format_arn(
            service="cloudwatch", resource="alarm", resource_name=alarm_name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
