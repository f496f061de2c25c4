"""CloudWatch alarms in ALARM that concern the endpoint, found by the dimensions they watch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

ENDPOINT_DIMENSION = "EndpointName"
VARIANT_DIMENSION = "VariantName"


@dataclass(frozen=True)
class Alarm:
    name: str
    reason: str
    # Variants the alarm watches; None stands for an endpoint-wide metric (no VariantName dimension).
    variants: frozenset[str | None]

    def concerns(self, variant: str) -> bool:
        return variant in self.variants or None in self.variants


def firing_alarms(cloudwatch: Any, endpoint_name: str, also_named: Iterable[str] = ()) -> list[Alarm]:
    """Alarms in ALARM on a metric of `endpoint_name` (a math alarm: any of its metrics), plus the composite
    or other alarms named in `also_named` (the stack's rollback alarms)."""
    named = set(also_named)
    found = []
    pages = cloudwatch.get_paginator("describe_alarms").paginate(
        StateValue="ALARM", AlarmTypes=["MetricAlarm", "CompositeAlarm"]
    )
    for page in pages:
        for alarm in page.get("MetricAlarms", []):
            variants = _watched_variants(alarm, endpoint_name)
            if variants or alarm["AlarmName"] in named:
                found.append(Alarm(alarm["AlarmName"], alarm.get("StateReason", ""), frozenset(variants)))
        for alarm in page.get("CompositeAlarms", []):
            if alarm["AlarmName"] in named:
                found.append(Alarm(alarm["AlarmName"], alarm.get("StateReason", ""), frozenset({None})))
    return found


def _watched_variants(alarm: dict[str, Any], endpoint_name: str) -> set[str | None]:
    metric_dimensions = [alarm.get("Dimensions", [])]
    metric_dimensions += [
        q["MetricStat"]["Metric"].get("Dimensions", []) for q in alarm.get("Metrics", []) if "MetricStat" in q
    ]
    variants: set[str | None] = set()
    for dimensions in metric_dimensions:
        values = {d["Name"]: d["Value"] for d in dimensions}
        if values.get(ENDPOINT_DIMENSION) == endpoint_name:
            variants.add(values.get(VARIANT_DIMENSION))
    return variants
