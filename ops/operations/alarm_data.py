"""`bin/ops verify`: does every metric a rollback alarm reads have data (issue 50 §3)?

An alarm over a metric that never arrives never rolls a deploy back: it fails open. CloudWatch documents EMF
extraction for PutLogEvents and Lambda, not for an endpoint's stdout (DESIGN.md 3.2d). A metric must have data
in the last WINDOW when its alarm treats missing data as breaching, or when the variant served requests.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

WINDOW = timedelta(minutes=15)
PERIOD = 60
EMF_HINT = 'if it is an engine metric, the endpoint\'s EMF lines may not be extracted: docs/how-to/first-deploy.md "Rollback alarms see data"'


def alarm_data_checks(
    cloudwatch: Any, endpoint: str, alarm_names: tuple[str, ...], now: datetime
) -> list[tuple[bool, str]]:
    """(passed, line) per metric of each rollback alarm."""
    if not alarm_names:
        return []
    alarms = cloudwatch.describe_alarms(AlarmNames=list(alarm_names), AlarmTypes=["MetricAlarm"])["MetricAlarms"]
    found = []
    for alarm in sorted(alarms, key=lambda a: a["AlarmName"]):
        always = alarm.get("TreatMissingData") == "breaching"
        for stat in metric_stats(alarm):
            found.append(_judge(cloudwatch, endpoint, alarm["AlarmName"], stat, always, now))
    return found


def metric_stats(alarm: dict) -> list[dict]:
    """The MetricStat of every metric the alarm reads (a math alarm's queries, or its one metric)."""
    if alarm.get("Metrics"):
        return [q["MetricStat"] for q in alarm["Metrics"] if "MetricStat" in q]
    metric = {
        "Namespace": alarm["Namespace"],
        "MetricName": alarm["MetricName"],
        "Dimensions": alarm.get("Dimensions", []),
    }
    return [{"Metric": metric, "Period": alarm["Period"], "Stat": alarm.get("ExtendedStatistic") or alarm["Statistic"]}]


def _judge(cloudwatch: Any, endpoint: str, alarm: str, stat: dict, always: bool, now: datetime) -> tuple[bool, str]:
    metric = stat["Metric"]
    label = f"{metric['Namespace']} {metric['MetricName']} ({stat['Stat']})"
    if _values(cloudwatch, {**stat, "Period": PERIOD}, now):
        return True, f"rollback alarm {alarm} reads {label}: data in the last {_minutes()} min"
    variant = next((d["Value"] for d in metric.get("Dimensions", []) if d["Name"] == "VariantName"), None)
    if not always and variant is not None and not _served(cloudwatch, endpoint, variant, now):
        return (
            True,
            f"rollback alarm {alarm} reads {label}: not judged, {variant} served no request in {_minutes()} min",
        )
    return False, (
        f"rollback alarm {alarm} reads {label}: no data in the last {_minutes()} min while the endpoint is in "
        f"service, so it cannot roll a deploy back; {EMF_HINT}"
    )


def _served(cloudwatch: Any, endpoint: str, variant: str, now: datetime) -> bool:
    dimensions = [{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": variant}]
    invocations = {"Namespace": "AWS/SageMaker", "MetricName": "Invocations", "Dimensions": dimensions}
    return sum(_values(cloudwatch, {"Metric": invocations, "Period": PERIOD, "Stat": "Sum"}, now)) > 0


def _values(cloudwatch: Any, stat: dict, now: datetime) -> list[float]:
    result = cloudwatch.get_metric_data(
        MetricDataQueries=[{"Id": "m", "MetricStat": stat, "ReturnData": True}],
        StartTime=now - WINDOW,
        EndTime=now + timedelta(seconds=PERIOD),  # the current minute's period included
    )
    return [v for r in result["MetricDataResults"] for v in r.get("Values", [])]


def _minutes() -> int:
    return int(WINDOW.total_seconds() // 60)
