"""Time to first token per variant as the serving image publishes it, one value per streamed request
(container/serving/latency.py), so a percentile is over every request of the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from container.serving.contract import METRIC_NAMESPACE, METRIC_TIME_TO_FIRST_TOKEN
from ops.operations.metric_window import variant_query, window_results


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
