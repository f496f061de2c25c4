"""CloudWatch Embedded Metric Format documents (one per stdout line).

Structure per the EMF specification (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
CloudWatch_Embedded_Metric_Format_Specification.html): a root `_aws` object with `Timestamp` (ms since
the epoch) and `CloudWatchMetrics` directives naming the namespace, dimension sets and metrics; every
dimension and metric named there is also a member of the root object.
"""

from __future__ import annotations

from typing import Any


def emf_document(
    namespace: str,
    dimensions: dict[str, str],
    metrics: dict[str, tuple[float, str]],
    timestamp_ms: int,
    properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """metrics: name -> (value, CloudWatch unit). Properties are extra searchable members, not metrics."""
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [list(dimensions)],
                    "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in metrics.items()],
                }
            ],
        },
        **(properties or {}),
        **dimensions,
        **{name: value for name, (value, _) in metrics.items()},
    }
