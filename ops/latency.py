"""Time to first token per variant, as the serving image publishes it: one value per streamed request
(container/serving/latency.py), so a percentile statistic from GetMetricData is over every request
the variant answered in the window, on every instance."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from container.serving.contract import DIM_ENDPOINT, DIM_VARIANT, METRIC_NAMESPACE, METRIC_TIME_TO_FIRST_TOKEN


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
    end = (datetime.now(UTC) + timedelta(minutes=1)).replace(second=0, microsecond=0)  # the current minute counts
    queries, ids = [], {}
    for index, variant in enumerate(variants):
        for number, statistic in enumerate(("SampleCount", *statistics)):
            query_id = f"v{index}s{number}"
            ids[query_id] = (variant, statistic)
            queries.append(
                {
                    "Id": query_id,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": METRIC_NAMESPACE,
                            "MetricName": METRIC_TIME_TO_FIRST_TOKEN,
                            "Dimensions": [
                                {"Name": DIM_ENDPOINT, "Value": endpoint},
                                {"Name": DIM_VARIANT, "Value": variant},
                            ],
                        },
                        "Period": window_seconds,  # one datapoint: the whole window
                        "Stat": statistic,
                    },
                    "ReturnData": True,
                }
            )
    found: dict[tuple[str, str], float] = {}
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=end - timedelta(seconds=window_seconds), EndTime=end
    )
    for page in pages:
        for result in page["MetricDataResults"]:
            values = [v for v in result["Values"] if v is not None]
            if values:
                found[ids[result["Id"]]] = values[0]
    return {
        variant: FirstTokenTimes(
            found.get((variant, "SampleCount"), 0.0), {s: found.get((variant, s)) for s in statistics}
        )
        for variant in variants
    }
