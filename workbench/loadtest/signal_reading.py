"""What the platform's scaling signal reads during a load step, beside what the client had in flight
(issue 52 item 6).

Target tracking on `SageMakerVariantConcurrentRequestsPerModelHighResolution` scales on CloudWatch's
`ConcurrentRequestsPerModel` (AWS/SageMaker, EndpointName + VariantName, 10 s datapoints), Average per
datapoint. Whether it reads what clients have in flight is not documented: a third-party harness saw its
Maximum overstate client concurrency 9.8x at 1 in flight and 1.35x at 50. So a run against a real endpoint
reads both statistics over each step's window and records them beside the step's own mean in flight per
instance; their ratio (Average over mean in flight) is what the derived target needs
(config.scaling_target: assumed 1.0 until a measurement records it). CloudWatch publishes with a delay:
the windows are read once the sweep is over, and a step whose datapoints are not there yet keeps None.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

METRIC = "ConcurrentRequestsPerModel"  # AWS/SageMaker; the high-resolution target's metric
PERIOD_SECONDS = 10  # its datapoints (DESIGN.md 3.2b)


def read_platform_concurrency(cloudwatch: Any, endpoint: str, variant: str, steps: list[Any]) -> None:
    """Fill each step's (workbench.loadtest.load.StepResult) platform_concurrency_* and concurrency_reading_ratio
    from CloudWatch's GetMetricData (the Operator policy's metric read; GetMetricStatistics it does not grant)."""
    metric = {
        "Namespace": "AWS/SageMaker",
        "MetricName": METRIC,
        "Dimensions": [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}],
    }
    queries = [
        {"Id": stat.lower(), "MetricStat": {"Metric": metric, "Period": PERIOD_SECONDS, "Stat": stat}}
        for stat in ("Average", "Maximum")
    ]
    for step in steps:
        if not step.window_utc:
            continue
        began, ended = (datetime.fromisoformat(t) for t in step.window_utc)
        answer = cloudwatch.get_metric_data(MetricDataQueries=queries, StartTime=began, EndTime=ended)
        values = {r["Id"]: r["Values"] for r in answer.get("MetricDataResults", [])}
        averages, maxima = values.get("average", []), values.get("maximum", [])
        if not averages:
            continue
        step.platform_concurrency_average = sum(averages) / len(averages)
        step.platform_concurrency_maximum = max(maxima or averages)
        if step.mean_in_flight > 0:
            step.concurrency_reading_ratio = step.platform_concurrency_average / step.mean_in_flight
