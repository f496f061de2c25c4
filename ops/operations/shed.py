"""Requests the serving image shed (429, container/serving/admission.py) per variant beside its invocations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from container.serving.contract import METRIC_NAMESPACE, METRIC_SHED_REQUESTS
from ops.operations.metric_window import SAGEMAKER, variant_query, window_results


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
