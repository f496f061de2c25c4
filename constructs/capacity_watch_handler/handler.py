"""Capacity watch: once a minute (an EventBridge schedule), whether each variant of one endpoint has
the instances it asked for, and whether a scaling activity failed, as CloudWatch metrics the serving
stack's alarms read (constructs/capacity_watch.py, docs/alarms.md "Capacity that does not arrive").

AWS gives no direct signal for this: Application Auto Scaling sends EventBridge events only for
"scaled to max" (user guide, "monitoring-eventbridge"), and no documented CloudWatch metric counts a
variant's instances. So it is read from the APIs and published:

- `InstancesShort` = max(DesiredInstanceCount, the scalable target's MinCapacity) - CurrentInstanceCount,
  at least 0 (DescribeEndpoint `ProductionVariants[]`, DescribeScalableTargets). The floor counts
  because a scheduled raise that SageMaker refuses (quota) never changes the desired count.
- `InstancesBelowMax` = the scalable target's MaxCapacity - DesiredInstanceCount, at least 0, for a
  registered variant: 0 is "target tracking is pinned at its maximum" (the capacity-ceiling alarm
  reads it: a load above target matters only when no instance can be added).
- `InstancesInService` = CurrentInstanceCount; with instance pools also per `InstanceType`
  (`ProductionVariants[].InstancePools[].CurrentInstanceCount`, botocore sagemaker model).
- `FailedScalingActivities` = activities with StatusCode Failed or Unfulfilled that started or ended
  in the last FAILED_WINDOW (DescribeScalingActivities): a level, not a counter, so a missed minute
  loses nothing and the alarm clears by itself once the window has passed.

The order of DescribeScalingActivities' results is not documented; pages are read until one holds an
activity older than the window (newest first is what the API returns in practice), at most MAX_PAGES.

Only the standard library and boto3, both part of the Lambda Python runtime. Environment:
ENDPOINT_NAME, VARIANT_NAMES (comma-separated), METRIC_NAMESPACE.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

SERVICE_NAMESPACE = "sagemaker"
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
FAILED = ("Failed", "Unfulfilled")  # botocore application-autoscaling ScalingActivityStatusCode
FAILED_WINDOW = timedelta(minutes=15)
MAX_PAGES = 5  # 50 activities a page
# Metric names, read by the alarms too (constructs/capacity_watch.py imports them).
INSTANCES_SHORT = "InstancesShort"
IN_SERVICE = "InstancesInService"
BELOW_MAX = "InstancesBelowMax"
FAILED_ACTIVITIES = "FailedScalingActivities"


def _clients() -> tuple[Any, Any, Any]:
    return boto3.client("sagemaker"), boto3.client("application-autoscaling"), boto3.client("cloudwatch")


def resource_id(endpoint: str, variant: str) -> str:
    return f"endpoint/{endpoint}/variant/{variant}"


def handler(
    event: dict[str, Any], context: Any = None, clients: tuple[Any, Any, Any] | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """Reads, publishes, returns what it published. An error (the endpoint gone, access denied) fails
    the invocation and publishes nothing: the alarms treat a silent watch as capacity short."""
    sagemaker, autoscaling, cloudwatch = clients or _clients()
    endpoint = os.environ["ENDPOINT_NAME"]
    variants = [v for v in os.environ["VARIANT_NAMES"].split(",") if v]
    now = now or datetime.now(UTC)
    described = sagemaker.describe_endpoint(EndpointName=endpoint)
    ranges = scaling_ranges(autoscaling, endpoint, variants)
    data = []
    for summary in described.get("ProductionVariants", []):
        name = summary["VariantName"]
        if name not in variants:
            continue
        failed = failed_activities(autoscaling, endpoint, name, now - FAILED_WINDOW)
        floor, ceiling = ranges.get(name, (None, None))
        data += variant_metrics(endpoint, summary, floor, failed, now, ceiling=ceiling)
    print(json.dumps({"endpoint": endpoint, "published": [_brief(d) for d in data]}))  # one line per run
    if data:  # PutMetricData takes up to 1,000 metrics a call; two variants send at most 16
        cloudwatch.put_metric_data(Namespace=os.environ["METRIC_NAMESPACE"], MetricData=data)
    return {"endpoint": endpoint, "status": described["EndpointStatus"], "metrics": len(data)}


def variant_metrics(
    endpoint: str, summary: dict[str, Any], floor: int | None, failed: int, now: datetime, ceiling: int | None = None
) -> list[dict[str, Any]]:
    current = summary.get("CurrentInstanceCount") or 0
    wanted = max(summary.get("DesiredInstanceCount") or 0, floor or 0)
    dimensions = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": summary["VariantName"]}]

    def metric(name: str, value: int, extra: list[dict[str, str]] | None = None) -> dict[str, Any]:
        return {
            "MetricName": name,
            "Dimensions": dimensions + (extra or []),
            "Timestamp": now,
            "Value": float(value),
            "Unit": "Count",
        }

    found = [
        metric(INSTANCES_SHORT, max(0, wanted - current)),
        metric(IN_SERVICE, current),
        metric(FAILED_ACTIVITIES, failed),
    ]
    if ceiling is not None:  # registered: how many more target tracking may still ask for
        found.append(metric(BELOW_MAX, max(0, ceiling - (summary.get("DesiredInstanceCount") or 0))))
    for pool in summary.get("InstancePools") or []:
        instance_type = [{"Name": "InstanceType", "Value": pool["InstanceType"]}]
        found.append(metric(IN_SERVICE, pool["CurrentInstanceCount"], instance_type))
    return found


def scaling_floors(autoscaling: Any, endpoint: str, variants: list[str]) -> dict[str, int]:
    """Each registered variant's MinCapacity (what a scheduled raise sets); unregistered ones absent."""
    return {name: low for name, (low, _) in scaling_ranges(autoscaling, endpoint, variants).items()}


def scaling_ranges(autoscaling: Any, endpoint: str, variants: list[str]) -> dict[str, tuple[int, int]]:
    """Each registered variant's (MinCapacity, MaxCapacity); unregistered ones absent."""
    ids = {resource_id(endpoint, v): v for v in variants}
    if not ids:  # an empty ResourceIds filter would list every target in the account
        return {}
    pages = autoscaling.get_paginator("describe_scalable_targets").paginate(
        ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=list(ids), ScalableDimension=SCALABLE_DIMENSION
    )
    return {
        ids[t["ResourceId"]]: (t["MinCapacity"], t["MaxCapacity"]) for page in pages for t in page["ScalableTargets"]
    }


def failed_activities(autoscaling: Any, endpoint: str, variant: str, since: datetime) -> int:
    """Failed or Unfulfilled activities of the variant that started or ended since `since`."""
    params = {
        "ServiceNamespace": SERVICE_NAMESPACE,
        "ResourceId": resource_id(endpoint, variant),
        "ScalableDimension": SCALABLE_DIMENSION,
    }
    count = 0
    for number, page in enumerate(autoscaling.get_paginator("describe_scaling_activities").paginate(**params)):
        activities = page["ScalingActivities"]
        count += sum(
            1 for a in activities if a["StatusCode"] in FAILED and (a.get("EndTime") or a["StartTime"]) >= since
        )
        if number + 1 >= MAX_PAGES or any(a["StartTime"] < since for a in activities):
            break
    return count


def _brief(datum: dict[str, Any]) -> str:
    where = "/".join(d["Value"] for d in datum["Dimensions"][1:])
    return f"{where} {datum['MetricName']}={datum['Value']:g}"
