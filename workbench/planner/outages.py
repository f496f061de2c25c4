"""The bad night: instance types that cannot be provisioned for a while (`plan --unavailable TYPE@WINDOW`).

From WINDOW's start until its end no new instance of TYPE comes into being (an insufficient-capacity
error on every attempt); instances already in service stay. SageMaker then tries the variant's next
instance pool ("realtime-endpoints-heterogeneous": on an insufficient capacity error it "automatically
falls back to the next pool in priority order"). WINDOW is a peak window of the traffic by name (every
window of that name: `friday-chapters`, `tokyo-evening`) or an ISO interval
`2026-10-30T07:00Z/2026-10-30T13:00Z`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from workbench.planner.fleet import always
from workbench.planner.traffic import ONE_MINUTE, TrafficProfile


class OutageError(ValueError):
    """An --unavailable value that cannot be used; the message names it and what is allowed."""


@dataclass(frozen=True)
class Outage:
    instance_type: str
    start_minute: int
    end_minute: int  # exclusive
    window: str  # as given: a peak window's name or the ISO interval

    def blocks(self, instance_type: str, minute: int) -> bool:
        return instance_type == self.instance_type and self.start_minute <= minute < self.end_minute


def availability(outages: list[Outage]):
    """Can TYPE be provisioned at MINUTE? (planner.fleet.Availability)"""
    if not outages:
        return always  # recognised by the oracle, which then needs no minute-by-minute look-up

    def available(instance_type: str, minute: int) -> bool:
        return not any(outage.blocks(instance_type, minute) for outage in outages)

    return available


def parse_outages(values: list[str], traffic: TrafficProfile, instance_types: list[str]) -> list[Outage]:
    """Every `TYPE@WINDOW`; `instance_types` are the ones the environment's variants may run on."""
    return [outage for value in values for outage in parse_outage(value, traffic, instance_types)]


def parse_outage(value: str, traffic: TrafficProfile, instance_types: list[str]) -> list[Outage]:
    instance_type, at, window = value.partition("@")
    instance_type, window = instance_type.strip(), window.strip()
    if not at or not instance_type or not window:
        raise OutageError(f"--unavailable {value!r}: expected TYPE@WINDOW, e.g. ml.g5.xlarge@friday-chapters")
    if instance_type not in instance_types:
        raise OutageError(
            f"--unavailable {value!r}: {instance_type!r} is not an instance type of this environment's variants; "
            f"allowed: {', '.join(instance_types)}"
        )
    if "/" in window:
        start, end = _interval(value, window, traffic)
        return [Outage(instance_type, start, end, window)]
    spans = [(p.start_minute, p.end_minute) for p in traffic.peaks if _same_name(p.name, window)]
    if not spans:
        names = ", ".join(dict.fromkeys(p.name for p in traffic.peaks)) or "none"
        raise OutageError(
            f"--unavailable {value!r}: no peak window {window!r} in the traffic ({traffic.name}); allowed: a peak "
            f"window ({names}) or an ISO interval such as 2026-10-30T07:00Z/2026-10-30T13:00Z"
        )
    return [Outage(instance_type, start, end, window) for start, end in spans]


def _same_name(peak: str, given: str) -> bool:
    """`tokyo-evening` names the window `tokyo evening` (a Make variable cannot hold the space)."""
    return peak.replace(" ", "-") == given.replace(" ", "-")


def _interval(value: str, window: str, traffic: TrafficProfile) -> tuple[int, int]:
    first, _, last = window.partition("/")
    start, end = (_instant(value, text) for text in (first, last))
    if end <= start:
        raise OutageError(f"--unavailable {value!r}: the interval ends at or before it starts")
    minutes = len(traffic.requests_per_minute)
    begin = max(0, int((start - traffic.start) / ONE_MINUTE))
    finish = min(minutes, -int(-(end - traffic.start) // ONE_MINUTE))
    if finish <= 0 or begin >= minutes:
        span_end = traffic.time_at(minutes)
        raise OutageError(
            f"--unavailable {value!r}: the interval lies outside the traffic ({traffic.name}: "
            f"{traffic.start:%Y-%m-%dT%H:%MZ}/{span_end:%Y-%m-%dT%H:%MZ})"
        )
    return begin, finish


def _instant(value: str, text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise OutageError(
            f"--unavailable {value!r}: {text!r} is not an ISO 8601 time with an offset or Z "
            "(e.g. 2026-10-30T07:00Z/2026-10-30T13:00Z)"
        )
    return when.astimezone(UTC)


def describe(outages: list[Outage], traffic_start: datetime, fallbacks: dict[str, list[str]]) -> str:
    """One line for the summary: what cannot be provisioned when, and which pools take over."""
    parts = []
    for outage in outages:
        start = traffic_start + outage.start_minute * ONE_MINUTE
        end = traffic_start + outage.end_minute * ONE_MINUTE
        until = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%a %Y-%m-%d %H:%M}"
        parts.append(f"no new {outage.instance_type} {start:%a %Y-%m-%d %H:%M}–{until} UTC ({outage.window})")
    takeover = "; ".join(
        f"{variant}: {' → '.join(types)}" if len(types) > 1 else f"{variant}: no fallback pool"
        for variant, types in fallbacks.items()
    )
    return f"{'; '.join(parts)}; instances in service stay; pools in priority order: {takeover}"
