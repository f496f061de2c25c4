"""One sick instance among healthy peers: an alarm per variant and a dashboard row of per-instance lines.

Needs `endpoint_metrics.enhanced_metrics`: SageMaker's invocation and utilisation metrics then carry an
`InstanceId` dimension (SageMaker developer guide, monitoring-cloudwatch-enhanced-metrics). Instance IDs
change with every scale-out and deploy, so Metrics Insights queries group by `InstanceId` at evaluation time.

- Alarm `<variant>-instance-outlier` (ticket): the slowest serving instance's mean `ModelLatency` over the
  fastest's, per minute, at or above `endpoint_metrics.outlier_latency_ratio` for `outlier_minutes`. Latency,
  not GPU utilisation: an instance without invocations (old fleet in a bake, one still starting) has no
  latency and drops out, where its idle GPU would look like an outlier. Every instance of a variant serves
  the same mix, so the ratio compares like with like whatever ModelLatency measures for streams. With
  instance pools a healthy instance of a weaker type is slower by about the ratio of capacities (issue 42),
  and the metrics carry no instance type: the threshold is the ratio times the spread of the pool types'
  `planning.capacity` (1 for one type), at the price of a later ticket on a one-type fleet. A mixed-type
  minute is NOT told apart (docs/reference/alarms.md "Instance outlier"); a single instance has no peer.
- Dashboard row per variant: GPU utilisation, invocations, model latency and 5XX per instance, one widget
  per query (CloudWatch "Metrics Insights quotas": one query per GetMetricData call).

The queries name `SCHEMA("AWS/SageMaker", EndpointName, InstanceId, VariantName)`, which "narrows the query
results to only the metrics with that exact dimension set" (CloudWatch user guide, "Metrics Insights query
components and syntax"), so variant-level series do not mix into MAX and MIN; should SageMaker add a
dimension, the alarm holds its state and the rows show it. An alarm watches one series, so the GROUP BY
query feeds `MAX(q) / MIN(q)` (user guide, "Use Metrics Insights queries with metric math", "Create alarms
on Metrics Insights queries").
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
