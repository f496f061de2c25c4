"""One CloudWatch dashboard per environment: traffic, latency, engine state, GPUs, capacity, alarms."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from constructs import Construct
from constructs.instance_outlier import InstanceOutlier
from constructs.serving_alarms import ServingAlarms
from constructs.variant_metrics import INSTANCE_NAMESPACE, VariantMetrics
from container.serving import contract

WIDTH = 8
INSTANCE_TYPE_DIMENSION = "InstanceType"  # on a pooled variant's metrics, beside EndpointName and VariantName


@dataclass(frozen=True)
class ScheduledMinimum:
    """A scheduled window's raised floor, as the dashboard's text lists it."""

    name: str
    min_capacity: int
    start: str  # the scheduled action's cron(...) expression
    end: str
    timezone: str  # IANA


@dataclass(frozen=True)
class VariantCapacity:
    """An autoscaled variant's bounds: the instance graph marks `max_capacity`; the text lists the windows."""

    min_capacity: int
    max_capacity: int
    windows: tuple[ScheduledMinimum, ...] = ()


@dataclass(frozen=True)
class ServingDashboardProps:
    alarms: ServingAlarms  # every alarm's state, and the variants' metrics
    max_num_seqs: int  # the engine's limit, named in the running-sequences graph's title
    admission_deadline_ms: int  # what the admission check sheds at, named in the shedding graph's title
    capacity: Mapping[str, VariantCapacity] = field(default_factory=dict)  # per autoscaled variant
    # Variants with instance pools: their types, preferred first; each gets lines per type.
    instance_pools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    instance_outlier: InstanceOutlier | None = None  # its per-instance rows, one per variant


class ServingDashboard(Construct):
    def __init__(self, scope: Construct, id: str, props: ServingDashboardProps) -> None:
        super().__init__(scope, id)
        alarms = props.alarms
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(6))
        self.variants = alarms.metrics
        graph = self._graph
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=alarms.all_alarms, width=24, height=4),
        )
        self.dashboard.add_widgets(
            graph("Invocations / min", lambda v: v.invocations(), stacked=True),
            graph("Model latency p50 (µs)", lambda v: v.model_latency("p50")),
            graph("Model latency p99 (µs; for streams undocumented)", lambda v: v.model_latency("p99")),
        )
        # Per-request latency at the container boundary: percentiles over every request of a variant.
        ttft = contract.METRIC_TIME_TO_FIRST_TOKEN
        self.dashboard.add_widgets(
            self._percentiles("Time to first token p50 / p95 / p99 (ms, every request)", ttft),
            graph(
                "Time per output token p95 (ms)",
                lambda v: v.latency(contract.METRIC_TIME_PER_OUTPUT_TOKEN, "p95"),
            ),
            graph("5XX errors / min", lambda v: v.errors_5xx()),
        )
        self.dashboard.add_widgets(
            graph("End-to-end latency p95 (ms)", lambda v: v.latency(contract.METRIC_END_TO_END_LATENCY, "p95")),
            graph(
                "Engine queue time p95 (ms; per instance, diagnostic)",
                lambda v: v.engine_metric(contract.METRIC_ENGINE_QUEUE_TIME_P95, "Maximum"),
            ),
            graph("4XX errors / min", lambda v: v.errors_4xx()),
        )
        self.dashboard.add_widgets(
            graph(
                "Queue depth (waiting requests per instance)", lambda v: v.engine_metric(contract.METRIC_QUEUE_DEPTH)
            ),
            graph(
                f"Running sequences (of max_num_seqs {props.max_num_seqs})",
                lambda v: v.engine_metric(contract.METRIC_RUNNING_SEQUENCES),
            ),
            graph("KV cache usage %", lambda v: v.engine_metric(contract.METRIC_KV_CACHE_USAGE)),
        )
        self._admission_row(props.admission_deadline_ms)
        self.dashboard.add_widgets(
            graph("Prefix-cache hit rate %", lambda v: v.engine_metric(contract.METRIC_PREFIX_CACHE_HIT_RATE)),
            graph("GPU utilisation %", lambda v: v.instance_metric("GPUUtilization")),
            graph("GPU memory %", lambda v: v.instance_metric("GPUMemoryUtilization")),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Instances per variant (scheduled windows: see text)",
                left=[alarms.instance_count(name) for name in self.variants],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=s.max_capacity, label=f"{name} max")
                    for name, s in props.capacity.items()
                ],
                width=16,
            ),
            cloudwatch.TextWidget(markdown=schedule_text(props.capacity), width=8, height=6),
        )
        if props.instance_pools:
            self._by_instance_type(props.instance_pools)
        if props.instance_outlier is not None:  # one row per variant, a line per instance (enhanced metrics)
            props.instance_outlier.add_to(self.dashboard)

    def _admission_row(self, deadline_ms: int) -> None:
        """Admission (container/serving/admission.py): what was turned away, and how far over capacity."""
        self.dashboard.add_widgets(
            self._graph(
                f"Shed requests / min (429, projected wait over {deadline_ms} ms)",
                lambda v: v.engine_metric(contract.METRIC_SHED_REQUESTS, "Sum"),
                stacked=True,
            ),
            self._graph("Shed share % of invocations", lambda v: v.shed_share(unique_ids=True)),
            self._graph(
                "Shed requests' projected wait p95 (ms)",
                lambda v: v.latency(contract.METRIC_SHED_PROJECTED_WAIT, "p95"),
            ),
        )

    def _graph(
        self, title: str, metric_of: Callable[[VariantMetrics], cloudwatch.Metric], stacked: bool = False
    ) -> cloudwatch.GraphWidget:
        """One line per variant."""
        return cloudwatch.GraphWidget(
            title=title,
            left=[metric_of(metrics).with_(label=name) for name, metrics in self.variants.items()],
            width=WIDTH,
            stacked=stacked,
        )

    def _by_instance_type(self, pools: Mapping[str, tuple[str, ...]]) -> None:
        """Variants with instance pools: one line per variant and type. SageMaker publishes the variant
        metrics of a pooled variant also with an InstanceType dimension (SageMaker guide,
        realtime-endpoints-heterogeneous, "Monitoring"); the variant-level lines above aggregate types."""

        def by_type(metric_of: Callable[[VariantMetrics, dict[str, str]], cloudwatch.Metric]) -> list:
            return [
                metric_of(self.variants[name], {INSTANCE_TYPE_DIMENSION: instance_type}).with_(
                    label=f"{name} {instance_type}"
                )
                for name, types in pools.items()
                for instance_type in types
            ]

        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Invocations / min per instance, by instance type (instance pools)",
                left=by_type(lambda m, d: m.metric("InvocationsPerInstance", statistic="Sum", extra_dimensions=d)),
                width=WIDTH,
            ),
            cloudwatch.GraphWidget(
                title="Model latency p50 (µs), by instance type (instance pools)",
                left=by_type(lambda m, d: m.metric("ModelLatency", statistic="p50", extra_dimensions=d)),
                width=WIDTH,
            ),
            cloudwatch.GraphWidget(
                title="GPU utilisation %, by instance type (instance pools)",
                left=by_type(
                    lambda m, d: m.metric(
                        "GPUUtilization", namespace=INSTANCE_NAMESPACE, statistic="Average", extra_dimensions=d
                    )
                ),
                width=WIDTH,
            ),
        )

    def _percentiles(self, title: str, metric_name: str) -> cloudwatch.GraphWidget:
        """p50, p95 and p99 of one latency metric, one line each per variant."""
        return cloudwatch.GraphWidget(
            title=title,
            left=[
                metrics.latency(metric_name, statistic).with_(label=f"{name} {statistic}")
                for name, metrics in self.variants.items()
                for statistic in ("p50", "p95", "p99")
            ],
            width=WIDTH,
        )

    @property
    def dashboard_name(self) -> str:
        return self.dashboard.dashboard_name


def schedule_text(capacity: Mapping[str, VariantCapacity]) -> str:
    lines = ["### Scheduled capacity (local time)"]
    for name, bounds in capacity.items():
        lines.append(f"**{name}**: {bounds.min_capacity}-{bounds.max_capacity} outside windows")
        lines += [
            f"- {w.name}: min {w.min_capacity} from `{w.start}` to `{w.end}` ({w.timezone})" for w in bounds.windows
        ]
    return "\n".join(lines)
