"""The sandbox's CloudWatch GetMetricData in time linear in what it reads, not in periods x everything stored.

moto 5.2.5's `CloudWatchBackend.get_metric_data` scans every datapoint in the span once per period per query: the
traffic export's 7 days of one-minute periods (10,080) over what three capacity sweeps leave (every swept request
adds datapoints) kept the sandbox at a full core for minutes and ended in the SDK's read timeout (issue 53).

Here each backend keeps its datapoints indexed by metric, in time order. A metric is its namespace, name and exact
set of dimensions ("dimensions are part of the unique identifier for a metric": CloudWatch API reference,
Dimension), so a MetricStat query reads only its metric's datapoints in [StartTime, EndTime), found by bisection,
and groups them by period. As in moto, periods start at StartTime, a period without datapoints is left out (as
CloudWatch leaves it out), a Unit given filters by unit, and each period's statistic is moto's (Statistics, with
moto_fixes' percentiles). Unlike moto, a query without dimensions reads the metric without dimensions, not every
metric of that name (moto's shortcut; CloudWatch's own rule above). A call with an expression query (metric math,
Metrics Insights) goes to moto's own implementation whole.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.cloudwatch import models as cloudwatch_models

MetricKey = tuple[str, str, tuple[tuple[str, str], ...]]


def metric_key(namespace: str, name: str, dimensions: Iterable[tuple[str, str]]) -> MetricKey:
    return namespace, name, tuple(sorted(dimensions))


def _seconds(when: datetime) -> float:
    """Epoch seconds; moto stores a datapoint without a Timestamp at its naive UTC `utcnow()`."""
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


@dataclass
class _Series:
    """One metric's datapoints: (epoch seconds, arrival number, datum), kept in time order."""

    times: list[float] = field(default_factory=list)
    points: list[tuple[float, int, Any]] = field(default_factory=list)
    in_order: bool = True

    def add(self, when: float, arrival: int, datum: Any) -> None:
        self.in_order = self.in_order and (not self.times or when >= self.times[-1])
        self.times.append(when)
        self.points.append((when, arrival, datum))

    def between(self, start: float, end: float) -> list[tuple[float, int, Any]]:
        if not self.in_order:  # a backfill or a late datapoint: sorted once, when next read
            self.points.sort(key=lambda point: point[0])
            self.times = [point[0] for point in self.points]
            self.in_order = True
        return self.points[bisect.bisect_left(self.times, start) : bisect.bisect_left(self.times, end)]


class MetricIndex:
    """A backend's `metric_data` by metric, brought up to date with what was put since, when read."""

    def __init__(self) -> None:
        self.series: dict[MetricKey, _Series] = {}
        self.indexed = 0  # how many of the backend's metric_data are in `series`
        self.lock = threading.Lock()  # the moto server answers requests on several threads

    def catch_up(self, stored: list[Any]) -> None:
        if len(stored) < self.indexed:  # the backend's data was replaced (a reset): start again
            self.series, self.indexed = {}, 0
        for arrival in range(self.indexed, len(stored)):
            datum = stored[arrival]
            key = metric_key(datum.namespace, datum.name, ((d.name, d.value) for d in datum.dimensions))
            self.series.setdefault(key, _Series()).add(_seconds(datum.timestamp), arrival, datum)
        self.indexed = len(stored)

    def read(self, stored: list[Any], key: MetricKey, start: float, end: float) -> list[tuple[float, int, Any]]:
        with self.lock:
            self.catch_up(stored)
            series = self.series.get(key)
            return series.between(start, end) if series else []


def _index_of(backend: Any) -> MetricIndex:
    with _INDEXES_LOCK:
        index = backend.__dict__.get("_sandbox_metric_index")
        if index is None:
            index = backend._sandbox_metric_index = MetricIndex()
        return index


_INDEXES_LOCK = threading.Lock()


def metric_stat_result(backend: Any, query: dict[str, Any], start: datetime, end: datetime, scan_by: str) -> dict:
    """One MetricStat query's result, as moto's get_metric_data words it."""
    stat_query = query["MetricStat"]
    metric = stat_query["Metric"]
    key = metric_key(
        metric["Namespace"], metric["MetricName"], ((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
    )
    period = int(stat_query["Period"])
    stat, unit = stat_query["Stat"], stat_query.get("Unit")
    first = _seconds(start)
    buckets: dict[int, list[tuple[int, Any]]] = {}
    for when, arrival, datum in _index_of(backend).read(backend.metric_data, key, first, _seconds(end)):
        if unit is None or datum.unit == unit:
            buckets.setdefault(int((when - first) // period), []).append((arrival, datum))
    values, timestamps = [], []
    for number in sorted(buckets):
        statistics = cloudwatch_models.Statistics([stat], start + timedelta(seconds=number * period))
        statistics.metric_data = [datum for _, datum in sorted(buckets[number], key=lambda point: point[0])]
        values.append(statistics.get_statistics_for_type(stat))
        timestamps.append(statistics.timestamp)
    if scan_by == "TimestampDescending":
        values.reverse()
        timestamps.reverse()
    label = query.get("Label") or f"{metric['MetricName']} {stat}"
    return {"id": query["Id"], "label": label, "values": values, "timestamps": timestamps, "status_code": "Complete"}


def indexed(original: Any) -> Any:
    """CloudWatchBackend.get_metric_data through the index when every query is a MetricStat (with moto's checks of
    the span); otherwise moto's own."""

    def get_metric_data(
        self: Any,
        queries: list[dict[str, Any]],
        start_time: datetime,
        end_time: datetime,
        scan_by: str = "TimestampAscending",
    ) -> list[dict[str, Any]]:
        start, end = start_time.replace(microsecond=0), end_time.replace(microsecond=0)
        if start >= end or self.aws_metric_data or not all("MetricStat" in query for query in queries):
            return original(self, queries, start_time, end_time, scan_by)
        results = [metric_stat_result(self, query, start, end, scan_by) for query in queries]
        return [result for result, query in zip(results, queries, strict=True) if query.get("ReturnData", True)]

    get_metric_data.moto_fixed = True  # type: ignore[attr-defined]
    get_metric_data.moto_original = original  # type: ignore[attr-defined]  # tests compare the two
    return get_metric_data
