"""GetMetricData over the last few minutes: one query per variant, metric and statistic, one datapoint each.

The window ends on the next whole minute, so the still-filling minute counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from ops.operations.alarms import ENDPOINT_DIMENSION, VARIANT_DIMENSION


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
    end = (datetime.now(UTC) + timedelta(minutes=1)).replace(second=0, microsecond=0)
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=end - timedelta(seconds=window_seconds), EndTime=end
    )
    for page in pages:
        for result in page["MetricDataResults"]:
            yield result["Id"], result["Values"]
