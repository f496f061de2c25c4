"""Alarms on each variant. The blue/green deployment rolls back when a rollback alarm fires."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch

from config.checks import MAX_ROLLBACK_ALARMS, ROLLBACK_ALARMS_PER_VARIANT
from config.schema import EnvironmentConfig
from constructs import Construct
from constructs.variant_metrics import VariantMetrics

MICROSECONDS_PER_MS = 1000


class ServingAlarms(Construct):
    """Per-variant alarms; `rollback_alarms` feed the endpoint's AutoRollbackConfiguration."""

    def __init__(self, scope: Construct, id: str, *, cfg: EnvironmentConfig) -> None:
        super().__init__(scope, id)
        self.metrics = {v.name: VariantMetrics(cfg.endpoint_name, v.name) for v in cfg.variants}
        self.rollback_alarms: list[cloudwatch.Alarm] = []
        minutes = cfg.alarms.evaluation_minutes
        for name, metrics in self.metrics.items():
            self.rollback_alarms.append(
                metrics.error_rate(metrics.errors_5xx()).create_alarm(
                    self,
                    f"{name}-5xx-rate",
                    alarm_description=f"{name}: 5XX responses above {cfg.alarms.error_rate_5xx_percent} % "
                    f"of invocations for {minutes} min (rolls back a blue/green deployment)",
                    threshold=cfg.alarms.error_rate_5xx_percent,
                    evaluation_periods=minutes,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    # No invocations means no errors to count; the engine alarms catch silence.
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
            self.rollback_alarms.append(
                metrics.model_latency("p99").create_alarm(
                    self,
                    f"{name}-latency-p99",
                    alarm_description=f"{name}: ModelLatency p99 above the {cfg.alarms.model_latency_p99_ms} ms "
                    f"SLO for {minutes} min (rolls back a blue/green deployment)",
                    threshold=cfg.alarms.model_latency_p99_ms * MICROSECONDS_PER_MS,
                    evaluation_periods=minutes,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        self.all_alarms: list[cloudwatch.Alarm] = [*self.rollback_alarms]
        # config.checks refuses more variants than this allows; this guards the code, not the config.
        assert len(self.rollback_alarms) == ROLLBACK_ALARMS_PER_VARIANT * len(self.metrics) <= MAX_ROLLBACK_ALARMS
