"""Capacity watch: once a minute (an EventBridge schedule), whether each variant of one endpoint has
the instances it asked for, whether a scaling activity failed and whether target tracking's scale-out
was refused, as CloudWatch metrics the serving stack's alarms read (constructs/capacity_watch.py,
docs/reference/alarms.md "Capacity that does not arrive").

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
- `ScaleOutRefused` (registered variants) = 1 while target tracking wants more and its last attempt
  was refused, else 0: one of the target-tracking policy's alarms that fire above the target (its
  AlarmHigh) is in ALARM, and the variant's newest scaling activity Failed or was Unfulfilled and
  started after that alarm went to ALARM or within FAILED_WINDOW. A refusal at once (the instance
  quota, a validation error while the endpoint is Updating) never moves the desired count, so
  InstancesShort stays 0; a newer activity (a retry in progress or done) clears it, and InstancesShort
  takes over. The alarms are the policy's `Alarms` (DescribeScalingPolicies, botocore
  application-autoscaling `ScalingPolicy.Alarms[].AlarmName`); which one is the high one is read from
  its ComparisonOperator (DescribeAlarms), not from the "-AlarmHigh-" in its name, which AWS chooses
  and does not document. The window also keeps a refusal counted when the alarm flaps OK and back.

- `InPeakWindow` (registered variants) = 1 while one of the environment's release_calendar windows (an
  audience's evening, a release) is open, else 0: with InstancesBelowMax 0 and the load above target, a
  floor that cannot rise in a peak pages (constructs/serving_alarms.py). The windows come as PEAK_WINDOWS,
  JSON `[{"timezone", "weekdays": [0-6, Monday 0], "start": minute of the day, "minutes"}]`, local time.

The order of DescribeScalingActivities' results is not documented; pages are read until one holds an
activity older than the window (newest first is what the API returns in practice), at most MAX_PAGES.

Only the standard library and boto3, both part of the Lambda Python runtime. Environment:
ENDPOINT_NAME, VARIANT_NAMES (comma-separated), METRIC_NAMESPACE, PEAK_WINDOWS (optional).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import boto3

SERVICE_NAMESPACE = "sagemaker"
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
FAILED = ("Failed", "Unfulfilled")  # botocore application-autoscaling ScalingActivityStatusCode
FAILED_WINDOW = timedelta(minutes=15)
MAX_PAGES = 5  # 50 activities a page
TARGET_TRACKING = "TargetTrackingScaling"  # botocore application-autoscaling PolicyType
# The target-tracking alarm that asks for more fires when the metric is above the target.
ABOVE = ("GreaterThanThreshold", "GreaterThanOrEqualToThreshold")
ALARM_NAMES_PER_CALL = 100  # DescribeAlarms AlarmNames: at most 100 (botocore cloudwatch model)
# Metric names, read by the alarms too (constructs/capacity_watch.py imports them).
INSTANCES_SHORT = "InstancesShort"
IN_SERVICE = "InstancesInService"
BELOW_MAX = "InstancesBelowMax"
FAILED_ACTIVITIES = "FailedScalingActivities"
SCALE_OUT_REFUSED = "ScaleOutRefused"
IN_PEAK_WINDOW = "InPeakWindow"


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
    above = alarms_above_target(autoscaling, cloudwatch, endpoint, list(ranges))
    since, data = now - FAILED_WINDOW, []
    peak = int(in_peak_window(json.loads(os.environ.get("PEAK_WINDOWS") or "[]"), now))
    for summary in described.get("ProductionVariants", []):
        name = summary["VariantName"]
        if name not in variants:
            continue
        activities = recent_activities(autoscaling, endpoint, name, since)
        floor, ceiling = ranges.get(name, (None, None))
        data += variant_metrics(endpoint, summary, floor, count_failed(activities, since), now, ceiling=ceiling)
        if name in ranges:  # registered: target tracking may ask for more
            refused = scale_out_refused(activities, above.get(name, []), since)
            data.append(metric_datum(endpoint, name, SCALE_OUT_REFUSED, refused, now))
            data.append(metric_datum(endpoint, name, IN_PEAK_WINDOW, peak, now))
    print(json.dumps({"endpoint": endpoint, "published": [_brief(d) for d in data]}))  # one line per run
    if data:  # PutMetricData takes up to 1,000 metrics a call; a variant sends 5 and one per instance pool
        cloudwatch.put_metric_data(Namespace=os.environ["METRIC_NAMESPACE"], MetricData=data)
    return {"endpoint": endpoint, "status": described["EndpointStatus"], "metrics": len(data)}


def in_peak_window(windows: list[dict[str, Any]], now: datetime) -> bool:
    """Whether `now` lies in one of the windows (PEAK_WINDOWS), each in its own zone's clock; a window
    that started yesterday may still be open (one running past midnight)."""
    for window in windows:
        local = now.astimezone(ZoneInfo(window["timezone"]))
        for back in (0, 1):
            day = (local - timedelta(days=back)).date()
            if day.weekday() not in window["weekdays"]:
                continue
            start = datetime(day.year, day.month, day.day, tzinfo=local.tzinfo) + timedelta(minutes=window["start"])
            if start <= local < start + timedelta(minutes=window["minutes"]):
                return True
    return False


def variant_metrics(
    endpoint: str, summary: dict[str, Any], floor: int | None, failed: int, now: datetime, ceiling: int | None = None
) -> list[dict[str, Any]]:
    current = summary.get("CurrentInstanceCount") or 0
    wanted = max(summary.get("DesiredInstanceCount") or 0, floor or 0)

    def metric(name: str, value: int, extra: list[dict[str, str]] | None = None) -> dict[str, Any]:
        return metric_datum(endpoint, summary["VariantName"], name, value, now, extra)

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


def metric_datum(
    endpoint: str, variant: str, name: str, value: int, now: datetime, extra: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    dimensions = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
    return {
        "MetricName": name,
        "Dimensions": dimensions + (extra or []),
        "Timestamp": now,
        "Value": float(value),
        "Unit": "Count",
    }


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


def recent_activities(autoscaling: Any, endpoint: str, variant: str, since: datetime) -> list[dict[str, Any]]:
    """The variant's activities on the pages read: page after page until one holds an activity that
    started before `since` (the first page always: it holds the newest), at most MAX_PAGES."""
    params = {
        "ServiceNamespace": SERVICE_NAMESPACE,
        "ResourceId": resource_id(endpoint, variant),
        "ScalableDimension": SCALABLE_DIMENSION,
    }
    found: list[dict[str, Any]] = []
    for number, page in enumerate(autoscaling.get_paginator("describe_scaling_activities").paginate(**params)):
        found += page["ScalingActivities"]
        if number + 1 >= MAX_PAGES or any(a["StartTime"] < since for a in page["ScalingActivities"]):
            break
    return found


def count_failed(activities: list[dict[str, Any]], since: datetime) -> int:
    """Failed or Unfulfilled activities that started or ended since `since`."""
    return sum(1 for a in activities if a["StatusCode"] in FAILED and (a.get("EndTime") or a["StartTime"]) >= since)


def alarms_above_target(
    autoscaling: Any, cloudwatch: Any, endpoint: str, variants: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """Each variant's target-tracking alarms that fire above the target (its AlarmHigh), as DescribeAlarms
    returns them (StateValue, StateTransitionedTimestamp). Variants without such a policy are absent."""
    owner: dict[str, str] = {}  # alarm name -> variant
    for variant in variants:
        pages = autoscaling.get_paginator("describe_scaling_policies").paginate(
            ServiceNamespace=SERVICE_NAMESPACE,
            ResourceId=resource_id(endpoint, variant),
            ScalableDimension=SCALABLE_DIMENSION,
        )
        for page in pages:
            for policy in page["ScalingPolicies"]:
                if policy["PolicyType"] == TARGET_TRACKING:
                    owner.update({alarm["AlarmName"]: variant for alarm in policy.get("Alarms", [])})
    names, found = list(owner), {}
    # Never an empty AlarmNames: that would describe every alarm in the account.
    for start in range(0, len(names), ALARM_NAMES_PER_CALL):
        chunk = names[start : start + ALARM_NAMES_PER_CALL]
        for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNames=chunk):
            for alarm in page["MetricAlarms"]:
                if alarm["ComparisonOperator"] in ABOVE and alarm["AlarmName"] in owner:
                    found.setdefault(owner[alarm["AlarmName"]], []).append(alarm)
    return found


def scale_out_refused(activities: list[dict[str, Any]], above: list[dict[str, Any]], since: datetime) -> int:
    """1 when an alarm above the target is in ALARM and the newest activity failed, having started after
    that alarm went to ALARM (this demand's attempt) or since `since` (a recent one, kept through a flap)."""
    if not activities:
        return 0
    newest = max(activities, key=lambda a: a["StartTime"])
    if newest["StatusCode"] not in FAILED:
        return 0
    for alarm in above:
        # StateTransitionedTimestamp: when StateValue last changed; StateUpdatedTimestamp also moves with
        # EvaluationState (botocore cloudwatch MetricAlarm), so it is only the fallback.
        entered = alarm.get("StateTransitionedTimestamp") or alarm["StateUpdatedTimestamp"]
        if alarm["StateValue"] == "ALARM" and newest["StartTime"] >= min(entered, since):
            return 1
    return 0


def _brief(datum: dict[str, Any]) -> str:
    where = "/".join(d["Value"] for d in datum["Dimensions"][1:])
    return f"{where} {datum['MetricName']}={datum['Value']:g}"
