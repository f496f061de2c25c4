"""What CloudWatch Logs does with a container's EMF lines on SageMaker, for the sandbox: every line of a
model server's log that is an EMF document becomes PutMetricData on the sandbox's CloudWatch, so that
alarms, `ops status` and the canary guard see the metrics the serving image really emitted.

EMF (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_
Specification.html): `_aws.Timestamp` in ms, `_aws.CloudWatchMetrics[]` directives of a namespace,
dimension sets and metrics; each named member's value is a number or an array of up to 100 numbers,
which PutMetricData takes as `Values`.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

POLL_SECONDS = 0.2


def metric_data(document: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(namespace, MetricData) pairs for one EMF document; [] for a line that is not EMF."""
    meta = document.get("_aws")
    if not isinstance(meta, dict):
        return []
    timestamp = datetime.fromtimestamp(meta["Timestamp"] / 1000, UTC)
    out = []
    for directive in meta.get("CloudWatchMetrics", []):
        data = []
        for dimension_set in directive["Dimensions"]:
            dimensions = [{"Name": name, "Value": str(document[name])} for name in dimension_set]
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                values = value if isinstance(value, list) else [value]
                datum = {"MetricName": metric["Name"], "Dimensions": dimensions, "Timestamp": timestamp}
                if metric.get("Unit"):
                    datum["Unit"] = metric["Unit"]
                data.append({**datum, "Values": [float(v) for v in values]})
        out.append((directive["Namespace"], data))
    return out


class EmfAgent(threading.Thread):
    """Follows one log file from its start and forwards every EMF line in it."""

    def __init__(self, log_path: Path, cloudwatch: Any) -> None:
        super().__init__(daemon=True)
        self.log_path = log_path
        self.cloudwatch = cloudwatch
        self.stopped = threading.Event()

    def run(self) -> None:
        with self.log_path.open("rb") as log:
            pending = b""
            while not self.stopped.is_set():
                chunk = log.read()
                if not chunk:
                    self.stopped.wait(POLL_SECONDS)
                    continue
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self.forward(line)

    def forward(self, line: bytes) -> None:
        if not line.startswith(b'{"_aws"'):
            return
        try:
            document = json.loads(line)
        except ValueError:
            return
        for namespace, data in metric_data(document):
            for start in range(0, len(data), 20):  # keep each call small
                self.cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 20])

    def stop(self) -> None:
        self.stopped.set()
