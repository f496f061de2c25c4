"""One sick instance among healthy peers: an alarm per variant and a dashboard row of per-instance lines.

Needs the endpoint config's `EnableEnhancedMetrics` (config `endpoint_metrics.enhanced_metrics`): with it,
SageMaker's invocation and utilisation metrics also carry an `InstanceId` dimension ("Amazon SageMaker AI
enhanced metrics for inference endpoints", SageMaker developer guide, monitoring-cloudwatch-enhanced-
metrics). Instance IDs change with every scale-out and deployment, so nothing here names one: CloudWatch
Metrics Insights queries group by `InstanceId` at evaluation time.

- Alarm `<variant>-instance-outlier` (ticket): over one minute, each serving instance's mean
  `ModelLatency`; the alarm watches the slowest instance's mean divided by the fastest's, and fires when
  it stays at or above `endpoint_metrics.outlier_latency_ratio` for `outlier_minutes` consecutive
  minutes. Latency, not GPU utilisation: an instance without invocations (the old fleet during a
  blue/green bake, a new instance still starting) has no latency datapoint and drops out of the
  comparison, where its idle GPU would look like an outlier. What ModelLatency measures for a streamed
  response is not documented (docs/reference/alarms.md); every instance of a variant serves the same mix, so the
  ratio compares like with like whatever it measures. With instance pools it does not: a healthy
  instance of a weaker fallback type is slower than one of the preferred type by about the ratio of
  their capacities (decode is bandwidth-bound; capacity and per-token time follow the same bandwidth:
  issue 42), and the per-instance metrics carry no instance-type dimension to compare within a type.
  So a variant's threshold is the configured ratio times the spread of its pool types' capacities
  (`planning.capacity`, strongest over weakest; 1 for one type): a sick instance still stands out,
  and a fleet on both pools is not a ticket by itself. The price: on a fleet of one type the alarm
  needs that much more before it fires.
- Dashboard row per variant: GPU utilisation, invocations, model latency and 5XX errors, one line per
  instance. A Metrics Insights widget holds one query (CloudWatch "Metrics Insights quotas": one query
  per GetMetricData call), hence one widget per metric and variant.

The queries name a SCHEMA with the instance dimension: `SCHEMA("AWS/SageMaker", EndpointName, InstanceId,
VariantName)` "narrows the query results to only the metrics with that exact dimension set" (CloudWatch
user guide, "Metrics Insights query components and syntax"), so the variant-level series (EndpointName,
VariantName only) no longer mix into MAX and MIN as one more group; the enhanced-metrics page says the
invocation metrics "include an InstanceId dimension" beside the endpoint's and variant's. Should SageMaker
add a dimension to them, the query matches nothing and the alarm holds its state (missing data: ignore);
the dashboard rows show it at once.

Its scope: a variant of at least two instances of one type. The canary's single instance has no peer,
so MAX / MIN is 1 whatever it does (its health is the canary guard's and the rollback alarms' business).
With instance pools a variant can serve on ml.g5 and ml.g6 at once, whose latencies differ by type
alone, and the invocation metrics carry no instance-type dimension (same page): NOT solved here. The
capacity watch's `InstancesInService` per `InstanceType` tells when two types serve, but whether an
alarm may combine a Metrics Insights query with plain metrics in one expression is not stated on the
alarm pages read, so the gate is left for a follow-up; a ticket during a mixed minute names the
cause on the dashboard row (docs/reference/alarms.md "Instance outlier"). Alarm form: a Metrics Insights query with GROUP BY
returns many series; an alarm must watch one, so the query feeds a metric-math expression
(`MAX(q) / MIN(q)`, functions that take an array of series; CloudWatch user guide, "Use Metrics Insights
queries with metric math" and "Create alarms on Metrics Insights queries").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from constructs import Construct
from constructs.alarm_topic import MissingData, RoutedAlarm, define_alarm, ticket
from constructs.variant_metrics import INSTANCE_NAMESPACE, SAGEMAKER_NAMESPACE
from container.serving import contract

INSTANCE_ID = "InstanceId"  # the enhanced-metrics dimension (developer guide page above)
ONE_MINUTE = Duration.minutes(1)
WIDGET_WIDTH = 5  # four graphs and the alarm's status per row of 24


@dataclass(frozen=True)
class InstanceOutlierProps:
    """What the outlier alarms and rows watch (config `endpoint_metrics`; stacks/serving_props.py)."""

    endpoint_name: str
    # One alarm and one dashboard row each. Leave it empty without enhanced metrics, which alone give the
    # InstanceId dimension: no alarm, no rows.
    variant_names: tuple[str, ...]
    latency_ratio: float  # slowest instance's mean ModelLatency over the fastest's at which the alarm fires ...
    minutes: int  # ... for this many consecutive minutes
    # Per variant: its pool types' strongest over weakest capacity, which widens its ratio. Default 1 (one type).
    pool_spread: Mapping[str, float] = field(default_factory=dict)


def per_instance_query(namespace: str, function: str, metric_name: str, endpoint_name: str, variant: str) -> str:
    """A Metrics Insights query: one series per instance of the variant. Names are quoted as the query
    language asks: identifiers in double quotes, dimension values in single quotes."""
    schema = f'SCHEMA("{namespace}", "{contract.DIM_ENDPOINT}", "{INSTANCE_ID}", "{contract.DIM_VARIANT}")'
    return (
        f'SELECT {function}("{metric_name}") FROM {schema} '
        f"WHERE \"{contract.DIM_ENDPOINT}\" = '{endpoint_name}' AND \"{contract.DIM_VARIANT}\" = '{variant}' "
        f'GROUP BY "{INSTANCE_ID}"'
    )


class InstanceOutlier(Construct):
    """`routed` and `alarms`: the outlier alarms, to be routed to the ticket topic by whoever routes the
    stack's alarms (a topic's publish permission is one statement for all its alarms, so this construct
    does not subscribe them itself). `add_to(dashboard)` adds the per-instance rows."""

    def __init__(self, scope: Construct, id: str, props: InstanceOutlierProps) -> None:
        super().__init__(scope, id)
        self.endpoint_name = props.endpoint_name
        self.variant_names = list(props.variant_names)
        self.routed: list[RoutedAlarm] = [
            self._alarm(name, props.latency_ratio, props.minutes, props.pool_spread.get(name, 1.0))
            for name in self.variant_names
        ]
        self.alarms = [r.alarm for r in self.routed]

    def query(
        self, variant: str, metric_name: str, function: str = "AVG", namespace: str = SAGEMAKER_NAMESPACE
    ) -> cloudwatch.MathExpression:
        """One series per instance. The label `${LABEL}` keeps each series' own name (its InstanceId; a
        dynamic label, CloudWatch user guide "Use dynamic labels"): CDK would otherwise label every line
        with the query text."""
        return cloudwatch.MathExpression(
            expression=per_instance_query(namespace, function, metric_name, self.endpoint_name, variant),
            using_metrics={},
            period=ONE_MINUTE,
            label="${LABEL}",
        )

    def _alarm(self, variant: str, ratio: float, minutes: int, spread: float) -> RoutedAlarm:
        threshold = round(ratio * spread, 2)
        why = (
            f" ({ratio:g} x {spread:.2f}, the spread of its pool types' planning.capacity: a healthy instance of "
            "the weaker type is that much slower)"
            if spread > 1
            else ""
        )
        slowest_over_fastest = cloudwatch.MathExpression(
            expression="MAX(latency) / MIN(latency)",
            using_metrics={"latency": self.query(variant, "ModelLatency")},
            period=ONE_MINUTE,
            label=f"{variant} slowest / fastest instance, mean ModelLatency",
        )
        return define_alarm(
            self,
            f"{variant}-instance-outlier",
            slowest_over_fastest,
            route=ticket(
                "one instance slower than its peers degrades a share of requests, not the service; "
                'look within the day (docs/reference/alarms.md "Instance outlier")'
            ),
            missing=MissingData(
                cloudwatch.TreatMissingData.IGNORE,
                "a minute no instance served has no ratio: the gap neither raises the ticket nor clears it "
                "(an idle night says nothing about the sick instance)",
            ),
            description=f"{variant}: the slowest serving instance's mean ModelLatency at least {threshold:g} times "
            f"the fastest's{why} for {minutes} consecutive min (one sick instance; per-instance rows on the dashboard)",
            threshold=threshold,
            periods=minutes,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        )

    def add_to(self, dashboard: cloudwatch.Dashboard) -> None:
        """One row per variant: the alarm's state, then GPU, invocations, latency and 5XX per instance."""
        graphs = (
            ("GPU utilisation % per instance", INSTANCE_NAMESPACE, "GPUUtilization", "AVG"),
            ("Invocations / min per instance", SAGEMAKER_NAMESPACE, "Invocations", "SUM"),
            ("Model latency mean (µs) per instance", SAGEMAKER_NAMESPACE, "ModelLatency", "AVG"),
            ("5XX errors / min per instance", SAGEMAKER_NAMESPACE, "Invocation5XXErrors", "SUM"),
        )
        for variant, alarm in zip(self.variant_names, self.alarms, strict=True):
            row: list[cloudwatch.IWidget] = [
                cloudwatch.AlarmStatusWidget(title=f"{variant}: instance outlier", alarms=[alarm], width=4, height=6)
            ]
            row += [
                cloudwatch.GraphWidget(
                    title=f"{variant}: {title}",
                    left=[self.query(variant, metric_name, function, namespace)],
                    width=WIDGET_WIDTH,
                )
                for title, namespace, metric_name, function in graphs
            ]
            dashboard.add_widgets(*row)
