"""The SageMaker endpoint and everything that watches it. Composes constructs; builds nothing itself."""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnOutput, Stack

from config import load_catalog, naming
from config.cost import floor_and_ceiling_usd
from config.gpu_memory import gpu_memory_alarm_percent
from config.prices import prices_for
from config.scaling_target import tracking_target
from config.schema import Catalog, EnvironmentConfig
from constructs import Construct
from constructs.alarm_topic import AlarmTopic, route_alarms
from constructs.capacity_watch import CapacityWatch
from constructs.capture_bucket import CaptureBucket
from constructs.capture_reader_role import capture_key_reader
from constructs.cost_budget import CostBudget
from constructs.deploy_guards import add_deploy_guards
from constructs.encryption_key import service_key
from constructs.image_repository import ImageRepository
from constructs.inference_endpoint import InferenceEndpoint
from constructs.instance_outlier import InstanceOutlier
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
        add_deploy_guards(self, cfg)  # make deploy's refusals, met by a plain `cdk deploy` too
        key = service_key(self, "ServingKey", description=f"{cfg.endpoint_name}: logs and alarm notifications")
        models = ServingModels(self, "Models", cfg=cfg, image=image, encryption_key=key)

        # With the topics below, what the access stack's policies name (stacks/ci_access_stack.py, issue 51).
        self.capture = capture = self._data_capture(cfg, models) if cfg.data_capture.enabled else None

        # Two destinations (docs/alarms.md): what users feel now pages, the rest is a ticket.
        paging = AlarmTopic(
            self, "Paging", encryption_key=key, destination=cfg.alarms.paging, display_name=f"{cfg.name} page"
        )
        tickets = AlarmTopic(
            self, "Tickets", encryption_key=key, destination=cfg.alarms.ticket, display_name=f"{cfg.name} ticket"
        )
        catalog = load_catalog()
        # The CPU alarm's threshold scales with vCPUs (SageMaker sums CPUUtilization over them). A variant
        # with instance pools may mix types; its alarm uses the preferred type's (priority 1) figure.
        vcpus = {v.name: catalog.instance_types[v.instance_type].vcpus for v in cfg.variants}
        # The GPU-memory alarm sits above what a healthy instance of the preferred type reads (config/gpu_memory.py).
        gpu_memory = {v.name: gpu_memory_alarm_percent(cfg, catalog.instance_types[v.instance_type]) for v in cfg.variants}
        alarms = ServingAlarms(self, "Alarms", cfg=cfg, vcpus=vcpus, gpu_memory_percent=gpu_memory)
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
            provisioning_minutes=cfg.planning.provisioning_minutes,
        )
        outlier = InstanceOutlier.for_environment(self, "InstanceOutlier", cfg)  # needs enhanced metrics
        self.routed_alarms = [*alarms.routed, *watch.routed, *outlier.routed]  # docs/alarms.md: workbench/alarm_table.py
        route_alarms(self.routed_alarms, paging=paging, tickets=tickets)
        budget = CostBudget(
            self,
            "CostBudget",
            limit_usd=cfg.alarms.monthly_budget_usd,  # the planner's figure (bin/plan ENV --write-config)
            tag_key="Environment",
            tag_value=cfg.tags.Environment,
            topic=tickets,
        )

        for variant_name, scaling in cfg.autoscaling.items():
            VariantAutoscaling(
                self,
                f"Autoscaling-{variant_name}",
                metrics=alarms.metrics[variant_name],
                scaling=scaling,
                endpoint=endpoint.endpoint,
                target_value=tracking_target(cfg, variant_name),  # explicit, or derived from planning.capacity
            )
        dashboard = ServingDashboard(self, "Dashboard", cfg=cfg, alarms=alarms, instance_outlier=outlier)
        self.topic_arns = (paging.topic.topic_arn, tickets.topic.topic_arn)  # `bin/ops verify` reads them

        self._outputs(cfg, catalog, dashboard, endpoint, paging, alarms)
        self._alerting_outputs(tickets, budget, prices_for(cfg, catalog).short())

    def _data_capture(self, cfg: EnvironmentConfig, models: ServingModels) -> CaptureBucket:
        """Users' prompts: a bucket with a KMS key of its own, written by the models' role, read only
        through the break-glass reader role, which the access stack holds (docs/configuration.md "Data capture")."""
        capture = CaptureBucket(
            self,
            "DataCapture",
            retention_days=cfg.data_capture.retention_days,
            description=f"{cfg.endpoint_name}: data capture (users' prompts) only",
        )
        capture.grant_capture(models.role)
        capture.encryption_key.add_to_resource_policy(capture_key_reader(cfg.name))
        for output, value in (
            (naming.OUTPUT_CAPTURE_BUCKET_ARN, capture.bucket.bucket_arn),
            (naming.OUTPUT_CAPTURE_KEY_ARN, capture.encryption_key.key_arn),
        ):
            CfnOutput(self, output, value=value, export_name=naming.export_name(self.stack_name, output))
        return capture

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
            description="On-demand USD per month at the autoscaling floor and ceiling "
            f"({prices_for(cfg, catalog).short()}, config/catalog.yaml pricing)",
        )
        CfnOutput(self, naming.OUTPUT_DASHBOARD_NAME, value=dashboard.dashboard_name)
        CfnOutput(self, naming.OUTPUT_ENDPOINT_NAME, value=endpoint.endpoint.attr_endpoint_name)
        CfnOutput(self, naming.OUTPUT_ENDPOINT_CONFIG_NAME, value=endpoint.config.attr_endpoint_config_name)
        CfnOutput(self, naming.OUTPUT_ALARM_TOPIC_ARN, value=topic.topic.topic_arn, description="The paging topic")
        CfnOutput(self, naming.OUTPUT_VARIANT_NAMES, value=",".join(endpoint.variant_names))
        CfnOutput(self, naming.OUTPUT_ROLLBACK_ALARMS, value=",".join(a.alarm_name for a in alarms.rollback_alarms))

    def _alerting_outputs(self, tickets: AlarmTopic, budget: CostBudget, prices_where: str) -> None:
        """The ticket topic (`bin/ops verify` reads its subscriptions, as the paging topic's) and the budget."""
        CfnOutput(self, naming.OUTPUT_TICKET_TOPIC_ARN, value=tickets.topic.topic_arn, description="The ticket topic")
        CfnOutput(
            self,
            naming.OUTPUT_MONTHLY_BUDGET,
            value=str(budget.limit_usd),
            description=f"AWS Budgets monthly limit, USD: the configured plan's cost ({prices_where}) x "
            "alarms.budget_margin",
        )

    def _alarm_arn(self, alarm_name: str) -> str:
        return self.format_arn(
            service="cloudwatch", resource="alarm", resource_name=alarm_name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
