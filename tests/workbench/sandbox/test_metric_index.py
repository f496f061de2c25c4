"""The sandbox's CloudWatch answers GetMetricData from an index by metric (workbench/sandbox/metric_index.py): the
same answers as moto's own scan, in work linear in what it reads. Work is counted, not timed: every look at a
stored datapoint's timestamp (any way of answering must place each datapoint it returns in its period; moto's scan
looks at every datapoint of the span once per period per query)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from moto.cloudwatch import models as cloudwatch_models

from ops.operations.traffic_export import read_traffic
from tests.ops_world import SAFE_NOW

NAMESPACE = "AWS/SageMaker"
WEEK_MINUTES = 7 * 24 * 60
# What three capacity sweeps leave: every swept request is Invocations 1 and Invocation5XXErrors 0 on the canary
# (workbench/sandbox/runtime.py), ~5,000 requests a sweep, all in the last hour.
SWEPT_REQUESTS = 3 * 5000


def dimensions(world: Any, variant: str) -> list[dict[str, str]]:
    return [{"Name": "EndpointName", "Value": world.endpoint}, {"Name": "VariantName", "Value": variant}]


def put(world: Any, data: list[dict[str, Any]], namespace: str = NAMESPACE) -> None:
    """PutMetricData as moto's backend takes it from a request (times naive UTC, as its parser gives them), without
    the HTTP round trips: tens of thousands of datapoints in a second."""
    backend = cloudwatch_models.cloudwatch_backends[world.cfg.account][world.cfg.region]
    parsed = [{**datum, "Timestamp": datum["Timestamp"].replace(tzinfo=None)} for datum in data]
    for start in range(0, len(parsed), 1000):  # PutMetricData takes at most 1,000 items
        backend.put_metric_data(namespace, parsed[start : start + 1000])


def a_used_sandbox(world: Any) -> int:
    """A week of one-minute Invocations per variant, then three sweeps' requests; how many datapoints it stored."""
    data = []
    for minute in range(WEEK_MINUTES):
        when = SAFE_NOW - timedelta(minutes=WEEK_MINUTES - minute, seconds=-20)
        for variant, value in (("primary", 100), ("canary", 5)):
            data.append({"MetricName": "Invocations", "Dimensions": dimensions(world, variant), "Value": value,
                         "Timestamp": when})  # fmt: skip
    for request in range(SWEPT_REQUESTS):
        when = SAFE_NOW - timedelta(minutes=60) + timedelta(seconds=request * 3600 / SWEPT_REQUESTS)
        for name, value in (("Invocations", 1), ("Invocation5XXErrors", 0)):
            data.append(
                {"MetricName": name, "Dimensions": dimensions(world, "canary"), "Value": value, "Timestamp": when}
            )
    put(world, data)
    return len(data)


class CountedTimestamps:
    """MetricDatumBase.timestamp as a data descriptor that counts reads and refuses more than `limit` (moto's scan
    of this sandbox would go on for minutes before a count could be compared)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.reads = limit, 0

    def __get__(self, datum: Any, owner: type) -> Any:
        if datum is None:
            return self
        self.reads += 1
        assert self.reads <= self.limit, f"more than {self.limit} looks at the stored datapoints' timestamps"
        return datum.__dict__["timestamp"]

    def __set__(self, datum: Any, value: Any) -> None:
        datum.__dict__["timestamp"] = value


def test_the_week_s_export_of_a_used_sandbox_looks_at_each_datapoint_at_most_once(prod, monkeypatch) -> None:
    stored = a_used_sandbox(prod)
    counted = CountedTimestamps(limit=stored)
    monkeypatch.setattr(cloudwatch_models.MetricDatumBase, "timestamp", counted, raising=False)

    recorded = read_traffic(prod.client("cloudwatch"), prod.cfg, 7, SAFE_NOW)
    assert counted.reads <= stored
    again = read_traffic(prod.client("cloudwatch"), prod.cfg, 7, SAFE_NOW)
    assert counted.reads <= stored  # the index is kept: a second export looks at nothing stored again

    assert len(recorded.requests) == WEEK_MINUTES and recorded.empty_minutes == 0
    swept_minutes = sorted(set(recorded.requests[-60:]))  # the last hour: 105 a minute plus its swept requests
    assert sum(recorded.requests) == WEEK_MINUTES * 105 + SWEPT_REQUESTS, swept_minutes
    assert again == recorded


def queries(world: Any) -> list[dict[str, Any]]:
    """MetricStat queries of several statistics, units and periods, one of them not returned."""
    metric = {"Namespace": "MangaAssist/Serving", "MetricName": "TimeToFirstToken",
              "Dimensions": dimensions(world, "canary")}  # fmt: skip
    invocations = {"Namespace": NAMESPACE, "MetricName": "Invocations", "Dimensions": dimensions(world, "canary")}
    return [
        {"Id": "p95", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "p95"}},
        {"Id": "avg", "MetricStat": {"Metric": metric, "Period": 300, "Stat": "Average", "Unit": "Milliseconds"}},
        {"Id": "n", "MetricStat": {"Metric": metric, "Period": 120, "Stat": "SampleCount"}, "ReturnData": False},
        {"Id": "sum", "MetricStat": {"Metric": invocations, "Period": 60, "Stat": "Sum"}, "Label": "calls"},
        {"Id": "max", "MetricStat": {"Metric": invocations, "Period": 180, "Stat": "Maximum"}},
    ]


@pytest.mark.parametrize("scan_by", ["TimestampAscending", "TimestampDescending"])
def test_its_answers_are_moto_s_own(prod, scan_by: str) -> None:
    """Datapoints put out of time order (a backfill), in two units and as values with counts, read with
    percentiles, averages, counts, sums and maxima over periods of 1 to 5 minutes: the index's answer is moto's."""
    latencies = []
    for second in range(0, 3600, 7):
        when = SAFE_NOW - timedelta(seconds=second)  # newest first
        latencies.append({"MetricName": "TimeToFirstToken", "Dimensions": dimensions(prod, "canary"),
                          "Values": [second % 97, second % 13], "Counts": [1, 2], "Timestamp": when,
                          "Unit": "Milliseconds" if second % 3 else "Seconds"})  # fmt: skip
    put(prod, latencies, "MangaAssist/Serving")
    put(prod, [{"MetricName": "Invocations", "Dimensions": dimensions(prod, "canary"), "Value": minute % 7,
                "Timestamp": SAFE_NOW - timedelta(minutes=minute)} for minute in range(90)])  # fmt: skip
    backend = cloudwatch_models.cloudwatch_backends[prod.cfg.account][prod.cfg.region]
    now = SAFE_NOW.replace(tzinfo=None)  # as moto's request parser hands times to its backend
    start, end = now - timedelta(hours=2), now + timedelta(minutes=1)
    answer = backend.get_metric_data(queries(prod), start, end, scan_by)
    assert answer == backend.get_metric_data.moto_original(backend, queries(prod), start, end, scan_by)
    assert [result["id"] for result in answer] == ["p95", "avg", "sum", "max"]
    assert all(result["values"] for result in answer)


def test_a_query_without_dimensions_reads_the_metric_without_dimensions(prod) -> None:
    """A metric is its namespace, name and exact dimensions (CloudWatch API reference, Dimension): moto's scan
    adds up every metric of the name instead."""
    cloudwatch = prod.client("cloudwatch")
    put(prod, [{"MetricName": "Invocations", "Value": 7, "Timestamp": SAFE_NOW}])
    put(prod, [{"MetricName": "Invocations", "Dimensions": dimensions(prod, "canary"), "Value": 100,
                "Timestamp": SAFE_NOW}])  # fmt: skip
    query = {"Id": "q", "MetricStat": {"Metric": {"Namespace": NAMESPACE, "MetricName": "Invocations"},
                                       "Period": 60, "Stat": "Sum"}}  # fmt: skip
    answer = cloudwatch.get_metric_data(
        MetricDataQueries=[query], StartTime=SAFE_NOW - timedelta(minutes=1), EndTime=SAFE_NOW + timedelta(minutes=1)
    )
    assert answer["MetricDataResults"][0]["Values"] == [7.0]
