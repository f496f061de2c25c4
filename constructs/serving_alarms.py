"""Alarms on each variant, built only from VariantMetrics. Rollback alarms also stop a blue/green update.

Missing data is chosen per alarm: no traffic means no errors and no latency (not breaching), but a
serving image that stops publishing its metrics is treated as failing (the `engine-silent` alarm).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from config.alarm_counts import MAX_ROLLBACK_ALARMS, ROLLBACK_ALARMS_PER_VARIANT
from config.schema import EnvironmentConfig
from constructs import Construct
from constructs.variant_metrics import VariantMetrics
from container.serving import contract

MICROSECONDS_PER_MS = 1000
GT = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
GTE = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
LT = cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
QUIET = cloudwatch.TreatMissingData.NOT_BREACHING
SILENCE_IS_FAILURE = cloudwatch.TreatMissingData.BREACHING


class ServingAlarms(Construct):
    """`rollback_alarms` feed AutoRollbackConfiguration; `all_alarms` go to the notification topic."""

    def __init__(self, scope: Construct, id: str, *, cfg: EnvironmentConfig, vcpus: dict[str, int]) -> None:
        super().__init__(scope, id)
        self.cfg = cfg
        self.metrics = {v.name: VariantMetrics(cfg.endpoint_name, v.name) for v in cfg.variants}
        self.rollback_alarms: list[cloudwatch.Alarm] = []
        self.all_alarms: list[cloudwatch.Alarm] = []
        for name, metrics in self.metrics.items():
            self.rollback_alarms += self._rollback(name, metrics)
            self._platform(name, metrics, vcpus[name])
            self._engine(name, metrics)
        self.all_alarms += self.rollback_alarms
        # config.checks.variants refuses more variants than this allows; this guards the code, not the config.
        assert len(self.rollback_alarms) == ROLLBACK_ALARMS_PER_VARIANT * len(self.metrics) <= MAX_ROLLBACK_ALARMS

    def _alarm(
        self,
        id: str,
        metric: cloudwatch.IMetric,
        *,
        description: str,
        threshold: float,
        minutes: int,
        comparison: cloudwatch.ComparisonOperator = GT,
        missing: cloudwatch.TreatMissingData = QUIET,
        notify: bool = True,
    ) -> cloudwatch.Alarm:
        alarm = metric.create_alarm(
            self,
            id,
            alarm_description=description,
            threshold=threshold,
            evaluation_periods=minutes,
            comparison_operator=comparison,
            treat_missing_data=missing,
        )
        if notify:
            self.all_alarms.append(alarm)
        return alarm

    def _rollback(self, name: str, m: VariantMetrics) -> list[cloudwatch.Alarm]:
        a, minutes = self.cfg.alarms, self.cfg.alarms.evaluation_minutes
        suffix = "(rolls back a blue/green deployment)"
        return [
            self._alarm(
                f"{name}-5xx-rate",
                m.error_rate(m.errors_5xx()),
                description=f"{name}: 5XX above {a.error_rate_5xx_percent} % of invocations for {minutes} min {suffix}",
                threshold=a.error_rate_5xx_percent,
                minutes=minutes,
                notify=False,
            ),
            # Time to first token as clients feel it, p95 over every request of the variant in each
            # minute (docs/alarms.md "Rollback alarms"), not SageMaker's ModelLatency: what that measures for
            # InvokeEndpointWithResponseStream is not documented. A minute with too few requests for
            # a p95 to mean anything counts as 0; a minute without requests as missing (not breaching).
            self._alarm(
                f"{name}-ttft-p95",
                m.first_token_p95_with_enough_requests(a.ttft_min_requests_per_minute),
                description=f"{name}: time to first token p95 above the {a.ttft_p95_ms} ms SLO for {minutes} "
                f"consecutive min (minutes with at least {a.ttft_min_requests_per_minute} requests) {suffix}",
                threshold=a.ttft_p95_ms,
                minutes=minutes,
                notify=False,
            ),
            self._alarm(
                f"{name}-engine-silent",
                m.engine_metric(contract.METRIC_QUEUE_DEPTH, statistic="SampleCount"),
                description=f"{name}: no metrics from the serving image for 3 min (crashed or stuck engine) {suffix}",
                threshold=1,
                minutes=3,
                comparison=LT,
                missing=SILENCE_IS_FAILURE,
                notify=False,
            ),
        ]

    def _platform(self, name: str, m: VariantMetrics, vcpus: int) -> None:
        a = self.cfg.alarms
        self._alarm(
            f"{name}-4xx-rate",
            m.error_rate(m.errors_4xx()),
            description=f"{name}: 4XX above {a.error_rate_4xx_percent} % of invocations for 5 min (client or guard errors)",
            threshold=a.error_rate_4xx_percent,
            minutes=5,
        )
        self._alarm(
            f"{name}-overhead-p99",
            m.overhead_latency("p99"),
            description=f"{name}: SageMaker OverheadLatency p99 above {a.overhead_latency_p99_ms} ms for 5 min",
            threshold=a.overhead_latency_p99_ms * MICROSECONDS_PER_MS,
            minutes=5,
        )
        self._alarm(
            f"{name}-gpu-memory",
            m.instance_metric("GPUMemoryUtilization"),
            description=f"{name}: GPU memory above {a.gpu_memory_percent} % for 5 min (vLLM preallocates "
            "gpu_memory_utilization; more means something else is on the GPU)",
            threshold=a.gpu_memory_percent,
            minutes=5,
        )
        self._alarm(
            f"{name}-cpu",
            m.instance_metric("CPUUtilization"),
            description=f"{name}: CPU above {a.cpu_percent} % of {vcpus} vCPUs for 5 min (tokenisation or scheduler bound)",
            threshold=a.cpu_percent * vcpus,  # SageMaker sums CPUUtilization over vCPUs
            minutes=5,
        )
        idle = m.instance_metric("GPUUtilization").with_(period=Duration.minutes(5))
        self._alarm(
            f"{name}-gpu-idle",
            idle,
            description=f"{name}: GPU utilisation below {a.gpu_idle_percent} % for {a.gpu_idle_minutes} min (paying for idle GPUs)",
            threshold=a.gpu_idle_percent,
            minutes=a.gpu_idle_minutes // 5,
            comparison=LT,
        )

    def _engine(self, name: str, m: VariantMetrics) -> None:
        a = self.cfg.alarms
        self._alarm(
            f"{name}-queue-depth",
            m.engine_metric(contract.METRIC_QUEUE_DEPTH),
            description=f"CRITICAL {name}: vLLM queue above {a.queue_depth_critical:g} requests per instance for 2 min",
            threshold=a.queue_depth_critical,
            minutes=2,
        )
        self._alarm(
            f"{name}-kv-cache",
            m.engine_metric(contract.METRIC_KV_CACHE_USAGE),
            description=f"WARNING {name}: KV cache above {a.kv_cache_percent:g} % for 5 min (check context budget drift)",
            threshold=a.kv_cache_percent,
            minutes=5,
        )
        self._alarm(
            f"{name}-oom",
            m.engine_metric(contract.METRIC_OOM_ERRORS, statistic="Sum").with_(period=Duration.minutes(5)),
            description=f"CRITICAL {name}: out-of-memory errors caught in the last 5 min",
            threshold=0,
            minutes=1,
        )
        self._alarm(
            f"{name}-prefix-cache",
            m.engine_metric(contract.METRIC_PREFIX_CACHE_HIT_RATE).with_(period=Duration.minutes(15)),
            description=f"WARNING {name}: prefix-cache hit rate below {a.prefix_cache_hit_min_percent:g} % for 15 min "
            "(check for prompt template changes)",
            threshold=a.prefix_cache_hit_min_percent,
            minutes=1,
            comparison=LT,
        )
        scaling = self.cfg.autoscaling.get(name)
        if scaling is not None:
            self._alarm(
                f"{name}-at-max-capacity",
                self.instance_count(name),
                description=f"{name}: instance count pinned at max_capacity {scaling.max_capacity} for 15 min",
                threshold=scaling.max_capacity,
                minutes=15,
                comparison=GTE,
            )

    def instance_count(self, name: str) -> cloudwatch.MathExpression:
        """Instances serving, from how many metric lines the image emitted in each minute."""
        per_minute = 60 / self.cfg.container.metrics_interval_seconds
        samples = self.metrics[name].engine_metric(contract.METRIC_QUEUE_DEPTH, statistic="SampleCount")
        metric_id = "samples_" + name.replace("-", "_").lower()  # ids are [a-z][a-zA-Z0-9_]*, unique per graph
        return cloudwatch.MathExpression(
            expression=f"{metric_id} / {per_minute:g}",
            using_metrics={metric_id: samples},
            label=f"{name} instances",
            period=Duration.minutes(1),
        )
