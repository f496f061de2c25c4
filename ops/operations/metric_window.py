"""GetMetricData over the last few minutes: one query per variant, metric and statistic, one datapoint each.

The window ends on the next whole minute, so the still-filling minute counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

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
