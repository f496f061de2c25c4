"""GetMetricData over the last few minutes: one query per variant, metric and statistic, one datapoint each.

The window ends on the next whole minute, so the still-filling minute counts. The serving image publishes time to
first token once per streamed request (container/serving/latency.py), so a percentile is over every request of
the window; and the requests its admission check shed (429, container/serving/admission.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from container.serving.contract import METRIC_NAMESPACE, METRIC_SHED_REQUESTS, METRIC_TIME_TO_FIRST_TOKEN
from ops.operations.alarms import ENDPOINT_DIMENSION, VARIANT_DIMENSION

SAGEMAKER = "AWS/SageMaker"


def variant_query(
    query_id: str, namespace: str, metric: str, endpoint: str, variant: str, stat: str, window_seconds: int
) -> dict[str, Any]:
    """A MetricDataQuery for one variant's metric, one datapoint over the whole window."""
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": metric,
                "Dimensions": [
                    {"Name": ENDPOINT_DIMENSION, "Value": endpoint},
                    {"Name": VARIANT_DIMENSION, "Value": variant},
                ],
            },
            "Period": window_seconds,
            "Stat": stat,
        },
        "ReturnData": True,
    }


def window_results(
    cloudwatch: Any, queries: list[dict[str, Any]], window_seconds: int
) -> Iterator[tuple[str, list[float | None]]]:
    """(query id, values) for every result on every page, in the order CloudWatch returns them."""
    end = window_end()
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=end - timedelta(seconds=window_seconds), EndTime=end
    )
    for page in pages:
        for result in page["MetricDataResults"]:
            yield result["Id"], result["Values"]


def window_end() -> datetime:
    """The next whole minute: a window ending there counts the minute still filling."""
    return (datetime.now(UTC) + timedelta(minutes=1)).replace(second=0, microsecond=0)


def invocations_per_minute(
    cloudwatch: Any, endpoint: str, variants: Iterable[str], start: datetime, end: datetime, **params: Any
) -> Iterator[tuple[datetime, float]]:
    """(timestamp, invocations) of every variant's one-minute Sum datapoint from `start` to `end`."""
    queries = [variant_query(f"v{i}", SAGEMAKER, "Invocations", endpoint, v, "Sum", 60) for i, v in enumerate(variants)]
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=start, EndTime=end, **params
    )
    for page in pages:
        for result in page["MetricDataResults"]:
            yield from zip(result["Timestamps"], result["Values"], strict=True)


@dataclass(frozen=True)
class FirstTokenTimes:
    """One variant over one window; a percentile is None when the variant streamed nothing in it."""

    requests: float
    percentiles: dict[str, float | None]  # "p50" -> milliseconds

    def ms(self, statistic: str) -> str:
        value = self.percentiles.get(statistic)
        return "-" if value is None else f"{value:.0f} ms"


def first_token_times(
    cloudwatch: Any, endpoint: str, variants: list[str], window_seconds: int, statistics: tuple[str, ...] = ("p95",)
) -> dict[str, FirstTokenTimes]:
    """Each variant's request count and TTFT percentiles over the last `window_seconds` (whole minutes)."""
    queries, ids = [], {}
    for index, variant in enumerate(variants):
        for number, statistic in enumerate(("SampleCount", *statistics)):
            query_id = f"v{index}s{number}"
            ids[query_id] = (variant, statistic)
            queries.append(
                variant_query(
                    query_id, METRIC_NAMESPACE, METRIC_TIME_TO_FIRST_TOKEN, endpoint, variant, statistic, window_seconds
                )
            )
    found: dict[tuple[str, str], float] = {}
    for query_id, values in window_results(cloudwatch, queries, window_seconds):
        present = [v for v in values if v is not None]
        if present:
            found[ids[query_id]] = present[0]
    return {
        variant: FirstTokenTimes(
            found.get((variant, "SampleCount"), 0.0), {s: found.get((variant, s)) for s in statistics}
        )
        for variant in variants
    }


@dataclass(frozen=True)
class ShedCount:
    shed: float
    invocations: float

    def line(self) -> str:
        if not self.invocations:
            return "no invocations"
        return f"{self.shed:.0f} of {self.invocations:.0f} invocations ({100 * self.shed / self.invocations:.1f} %)"


def shed_counts(cloudwatch: Any, endpoint: str, variants: list[str], window_seconds: int) -> dict[str, ShedCount]:
    """Each variant's ShedRequests and Invocations (Sum) over the last `window_seconds`."""
    queries, ids = [], {}
    for index, variant in enumerate(variants):
        for key, namespace, metric in (
            ("shed", METRIC_NAMESPACE, METRIC_SHED_REQUESTS),
            ("invocations", SAGEMAKER, "Invocations"),
        ):
            query_id = f"{key}{index}"
            ids[query_id] = (variant, key)
            queries.append(variant_query(query_id, namespace, metric, endpoint, variant, "Sum", window_seconds))
    found = {
        ids[query_id]: sum(v for v in values if v is not None)
        for query_id, values in window_results(cloudwatch, queries, window_seconds)
    }
    return {v: ShedCount(found.get((v, "shed"), 0.0), found.get((v, "invocations"), 0.0)) for v in variants}
