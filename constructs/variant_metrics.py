"""CloudWatch metrics of one production variant. Alarms, scaling and the dashboard use only these."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from container.serving import contract

SAGEMAKER_NAMESPACE = "AWS/SageMaker"  # invocations, errors, latencies (microseconds)
INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"  # CPU, memory, GPU (summed over GPUs)
ONE_MINUTE = Duration.minutes(1)


class VariantMetrics:
    """Every metric here carries the EndpointName and VariantName dimensions of one variant."""

    def __init__(self, endpoint_name: str, variant_name: str) -> None:
        self.endpoint_name = endpoint_name
        self.variant_name = variant_name

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = SAGEMAKER_NAMESPACE,
        statistic: str = "Average",
        period: Duration = ONE_MINUTE,
        extra_dimensions: dict[str, str] | None = None,
    ) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=namespace,
            metric_name=metric_name,
            dimensions_map={
                contract.DIM_ENDPOINT: self.endpoint_name,
                contract.DIM_VARIANT: self.variant_name,
                **(extra_dimensions or {}),
            },
            statistic=statistic,
            period=period,
        )

    def invocations(self, period: Duration = ONE_MINUTE) -> cloudwatch.Metric:
        return self.metric("Invocations", statistic="Sum", period=period)

    def errors_5xx(self, period: Duration = ONE_MINUTE) -> cloudwatch.Metric:
        return self.metric("Invocation5XXErrors", statistic="Sum", period=period)

    def errors_4xx(self, period: Duration = ONE_MINUTE) -> cloudwatch.Metric:
        return self.metric("Invocation4XXErrors", statistic="Sum", period=period)

    def error_rate(self, errors: cloudwatch.Metric, period: Duration = ONE_MINUTE) -> cloudwatch.MathExpression:
        """Errors as a percentage of invocations; no invocations gives no data, not 0 %."""
        return cloudwatch.MathExpression(
            expression="100 * errors / invocations",
            using_metrics={"errors": errors, "invocations": self.invocations(period)},
            period=period,
            label=f"{self.variant_name} {errors.metric_name} %",
        )

    def shed_share(self, unique_ids: bool = False) -> cloudwatch.MathExpression:
        """Requests the admission check shed (429) as a percentage of invocations, per minute; no
        invocations gives no data. SageMaker counts a shed request in Invocations (and Invocation4XXErrors).
        unique_ids: metric ids carry the variant, for a graph holding every variant's expression."""
        suffix = "_" + self.variant_name.replace("-", "_").lower() if unique_ids else ""
        return cloudwatch.MathExpression(
            expression=f"100 * shed{suffix} / invocations{suffix}",
            using_metrics={
                f"shed{suffix}": self.engine_metric(contract.METRIC_SHED_REQUESTS, statistic="Sum"),
                f"invocations{suffix}": self.invocations(),
            },
            period=ONE_MINUTE,
            label=f"{self.variant_name} shed %",
        )

    def model_latency(self, statistic: str = "p99") -> cloudwatch.Metric:
        return self.metric("ModelLatency", statistic=statistic)

    def overhead_latency(self, statistic: str = "p99") -> cloudwatch.Metric:
        return self.metric("OverheadLatency", statistic=statistic)

    def instance_metric(self, metric_name: str, statistic: str = "Average") -> cloudwatch.Metric:
        return self.metric(metric_name, namespace=INSTANCE_NAMESPACE, statistic=statistic)

    def engine_metric(self, metric_name: str, statistic: str = "Average") -> cloudwatch.Metric:
        """A metric the serving image emits as EMF (names in container/serving/contract.py)."""
        if metric_name not in contract.VARIANT_METRICS:
            raise ValueError(f"{metric_name} is not emitted by the serving image")
        return self.metric(metric_name, namespace=contract.METRIC_NAMESPACE, statistic=statistic)

    def latency(self, metric_name: str, statistic: str = "p95") -> cloudwatch.Metric:
        """Per-request latency the image emits, one value per request (contract.LATENCY_METRICS):
        a percentile statistic here is over every request of the variant in the period."""
        if metric_name not in contract.LATENCY_METRICS:
            raise ValueError(f"{metric_name} is not a per-request latency the serving image emits")
        return self.metric(metric_name, namespace=contract.METRIC_NAMESPACE, statistic=statistic)

    def broken_minute(self, min_requests: int, error_percent: float, ttft_ms: int) -> cloudwatch.MathExpression:
        """1 in a minute with at least `min_requests` invocations whose 5XX share is above `error_percent`
        or whose TTFT p95 is above `ttft_ms`, else 0. No division (a minute without invocations would
        divide by zero), and FILL(…, 0) so a minute without errors or streams still compares."""
        return cloudwatch.MathExpression(
            expression=(
                f"IF(FILL(invocations, 0) >= {min_requests} AND (100 * FILL(errors, 0) > {error_percent:g} * "
                f"FILL(invocations, 0) OR FILL(ttft_p95, 0) > {ttft_ms}), 1, 0)"
            ),
            using_metrics={
                "invocations": self.invocations(),
                "errors": self.errors_5xx(),
                "ttft_p95": self.latency(contract.METRIC_TIME_TO_FIRST_TOKEN, "p95"),
            },
            period=ONE_MINUTE,
            label=f"{self.variant_name} broken minute (5XX > {error_percent:g} % or TTFT p95 > {ttft_ms} ms)",
        )

    def first_token_p95_with_enough_requests(self, min_requests: int) -> cloudwatch.MathExpression:
        """TTFT p95 of each minute, or 0 in a minute with fewer than `min_requests` first tokens: a
        variant serving a handful of requests must not roll a release back on three slow ones."""
        return cloudwatch.MathExpression(
            expression=f"IF(requests >= {min_requests}, ttft_p95, 0)",
            using_metrics={
                "ttft_p95": self.latency(contract.METRIC_TIME_TO_FIRST_TOKEN, "p95"),
                "requests": self.latency(contract.METRIC_TIME_TO_FIRST_TOKEN, "SampleCount"),
            },
            period=ONE_MINUTE,
            label=f"{self.variant_name} TTFT p95 (ms; 0 below {min_requests} requests/min)",
        )
