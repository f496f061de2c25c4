"""`bin/ops scaling-history`: how long this endpoint's scale-outs took, and --write-config's p95.

The record is Application Auto Scaling's DescribeScalingActivities per variant, "the previous six weeks" (API
reference, botocore's model). A scale-out's duration is StartTime (the new desired count asked of SageMaker) to
EndTime (SageMaker reported the change fulfilled); the alarm's detection before it is not included.
No activity names an instance type, and DescribeEndpoint gives only today's split, so a variant with pools
reports its scale-outs together. Direction is not a field either: AlarmHigh/AlarmLow in a target-tracking cause,
the bound a range change names ("minimum capacity was set to N": out), else the count the previous successful
activity set. Scale-ins and unknown directions are counted apart; Failed and Unfulfilled activities are listed
with their StatusMessage (the quota shows as ResourceLimitExceeded: SageMaker guide,
"endpoint-scaling-query-history").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ruamel.yaml.comments import CommentedMap

from config import ConfigError, EnvironmentConfig, environment_file
from config.editor import UnsafeEdit, edit_environment_file
from ops.operations.aws import AwsClients
from ops.operations.endpoint import configured_types, describe_endpoint
from ops.operations.errors import ExitCode, OpsError
from ops.operations.scaling import target_key

MAX_DAYS = 42  # "from the previous six weeks" (DescribeScalingActivities)
MIN_SAMPLES = 5  # fewer successful scale-outs make no p95 worth planning on
SUCCESSFUL = "Successful"
FAILED = ("Failed", "Unfulfilled")
UNFINISHED = ("Pending", "InProgress")
OUT, IN, UNKNOWN = "out", "in", "unknown"
TARGET = re.compile(r"desired (?:instance )?count to (\d+)", re.IGNORECASE)
# A range change names the bound it moved the count to: "minimum capacity was set to 110" (SageMaker guide,
# endpoint-scaling-query-history); the "maximum" wording is assumed, AWS shows no example of it.
RANGE_CAUSE = re.compile(r"^(minimum|maximum) capacity was set to \d+", re.IGNORECASE)


@dataclass(frozen=True)
class Activity:
    variant: str
    started: datetime
    ended: datetime | None
    status: str
    target: int | None  # the desired instance count it set (or tried to)
    before: int | None  # the count the previous successful activity set, when known
    direction: str  # OUT, IN or UNKNOWN
    cause: str
    message: str

    @property
    def minutes(self) -> float | None:
        return None if self.ended is None else (self.ended - self.started).total_seconds() / 60

    @property
    def is_scale_out(self) -> bool:
        """A successful scale-out with both times: a provisioning sample."""
        return self.status == SUCCESSFUL and self.direction == OUT and self.ended is not None


@dataclass(frozen=True)
class VariantTypes:
    """A variant's types by priority (the endpoint config in service) and instances in service of each now."""

    variant: str
    types: tuple[str, ...]
    in_service: dict[str, int]

    @property
    def label(self) -> str:
        """The type its scale-outs are attributed to; several pools share one label."""
        if len(self.types) == 1:
            return self.types[0]
        return " or ".join(self.types) + " (pools: type not recorded)"


@dataclass(frozen=True)
class Stats:
    label: str
    samples: int
    p50: float
    p95: float
    longest: float


@dataclass(frozen=True)
class History:
    env: str
    endpoint: str
    days: int
    read_at: datetime
    config_name: str
    config_created: datetime
    variants: tuple[VariantTypes, ...]
    activities: tuple[Activity, ...]  # started within the last `days`, oldest first

    def label(self, variant: str) -> str:
        return next(v.label for v in self.variants if v.variant == variant)

    @property
    def scale_outs(self) -> list[Activity]:
        return [a for a in self.activities if a.is_scale_out]

    @property
    def failures(self) -> list[Activity]:
        return [a for a in self.activities if a.status in FAILED]

    def counted_apart(self) -> dict[str, int]:
        rest = [a for a in self.activities if not a.is_scale_out and a.status not in FAILED]
        kinds = {
            "scale-ins": [a for a in rest if a.status == SUCCESSFUL and a.direction == IN],
            "in progress": [a for a in rest if a.status in UNFINISHED],
            "overridden": [a for a in rest if a.status == "Overridden"],
            "direction unknown": [a for a in rest if a.status == SUCCESSFUL and a.direction == UNKNOWN],
        }
        return {kind: len(found) for kind, found in kinds.items()}

    def stats_by_type(self) -> list[Stats]:
        by_label: dict[str, list[float]] = {}
        for activity in self.scale_outs:
            by_label.setdefault(self.label(activity.variant), []).append(_minutes(activity))
        return [stats(label, durations) for label, durations in sorted(by_label.items())]

    def overall(self) -> Stats | None:
        durations = [_minutes(a) for a in self.scale_outs]
        return stats("all scale-outs", durations) if durations else None


def _minutes(activity: Activity) -> float:
    assert activity.minutes is not None  # is_scale_out has an EndTime
    return activity.minutes


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest rank: with few samples p95 is the longest one, which is what a plan should stand on."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def stats(label: str, durations: list[float]) -> Stats:
    return Stats(label, len(durations), percentile(durations, 50), percentile(durations, 95), max(durations))


def check_days(days: int) -> None:
    if days > MAX_DAYS:
        raise OpsError(
            f"--days {days}: Application Auto Scaling keeps scaling activities for six weeks, so at most "
            f"--days {MAX_DAYS} (the default)",
            ExitCode.USAGE,
        )


def read_history(clients: AwsClients, cfg: EnvironmentConfig, days: int, now: datetime) -> History:
    """Activities of the last six weeks (older ones tell the direction of the first in the window), kept from
    `days` ago; the types from the endpoint config in service."""
    check_days(days)
    described = describe_endpoint(clients.sagemaker, cfg.endpoint_name, cfg.name)
    config = clients.sagemaker.describe_endpoint_config(EndpointConfigName=described["EndpointConfigName"])
    variants = variant_types(described, config)
    since = now - timedelta(days=days)
    activities = []
    for variant in variants:
        raw = read_activities(clients.autoscaling, cfg.endpoint_name, variant.variant)
        activities += [a for a in classify(variant.variant, raw) if a.started >= since]
    return History(
        env=cfg.name,
        endpoint=cfg.endpoint_name,
        days=days,
        read_at=now,
        config_name=config["EndpointConfigName"],
        config_created=config["CreationTime"],
        variants=variants,
        activities=tuple(sorted(activities, key=lambda a: a.started)),
    )


def variant_types(described: dict[str, Any], config: dict[str, Any]) -> tuple[VariantTypes, ...]:
    """InstancePools (by Priority) or InstanceType of the config; InstancePools[].CurrentInstanceCount or the
    variant's CurrentInstanceCount of the endpoint (botocore sagemaker model, InstancePoolSummary)."""
    live = {v["VariantName"]: v for v in described.get("ProductionVariants", [])}
    found = []
    for configured in config["ProductionVariants"]:
        name = configured["VariantName"]
        types = configured_types(configured)
        summary = live.get(name, {})
        if summary.get("InstancePools"):
            in_service = {p["InstanceType"]: p["CurrentInstanceCount"] for p in summary["InstancePools"]}
        else:
            in_service = {types[0]: summary.get("CurrentInstanceCount") or 0}
        found.append(VariantTypes(name, types, in_service))
    return tuple(found)


def read_activities(autoscaling: Any, endpoint: str, variant: str) -> list[dict[str, Any]]:
    pages = autoscaling.get_paginator("describe_scaling_activities").paginate(**target_key(endpoint, variant))
    return [activity for page in pages for activity in page["ScalingActivities"]]


def classify(variant: str, raw: list[dict[str, Any]]) -> list[Activity]:
    found = []
    count = None  # the desired count the last successful activity set
    for item in sorted(raw, key=lambda a: a["StartTime"]):
        message = item.get("StatusMessage", "")
        target = _target(item["Description"]) or _target(message)
        found.append(
            Activity(
                variant=variant,
                started=item["StartTime"],
                ended=item.get("EndTime"),
                status=item["StatusCode"],
                target=target,
                before=count,
                direction=direction(item["Cause"], target, count),
                cause=item["Cause"],
                message=message,
            )
        )
        if item["StatusCode"] == SUCCESSFUL and target is not None:
            count = target
    return found


def _target(text: str) -> int | None:
    match = TARGET.search(text)
    return int(match.group(1)) if match else None


def direction(cause: str, target: int | None, before: int | None) -> str:
    """AlarmHigh (out) or AlarmLow (in) in the cause, or the bound a range change names (minimum: out), else
    the count before compared with the target."""
    if "-AlarmHigh-" in cause:
        return OUT
    if "-AlarmLow-" in cause:
        return IN
    bound = RANGE_CAUSE.match(cause.strip())
    if bound:
        return OUT if bound.group(1).lower() == "minimum" else IN
    if target is None or before is None or target == before:
        return UNKNOWN
    return OUT if target > before else IN


def record_provisioning(cfg: EnvironmentConfig, history: History) -> str:
    """--write-config: the p95 rounded up, with where, when and over how many scale-outs; refused below MIN_SAMPLES."""
    overall = history.overall()
    samples = overall.samples if overall else 0
    if overall is None or samples < MIN_SAMPLES:
        raise OpsError(
            f"{samples} successful scale-out(s) in the last {history.days} days on {history.env}: fewer than "
            f"{MIN_SAMPLES}, too few for a p95; nothing written (planning.provisioning_minutes stays "
            f"{cfg.planning.provisioning_minutes}: {cfg.planning.provisioning_provenance()})",
            ExitCode.CHECK_FAILED,
        )
    minutes = math.ceil(overall.p95)
    variants = sorted({a.variant for a in history.scale_outs})
    measured = CommentedMap(
        where=f"{history.env}: {', '.join(variants)} ({history.endpoint})",
        measured_at=history.read_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        days=history.days,
        samples=samples,
        p50_minutes=round(overall.p50, 1),
        p95_minutes=round(overall.p95, 1),
    )
    try:
        edit_environment_file(environment_file(cfg.name), _set_provisioning(minutes, measured)).write()
    except UnsafeEdit as error:
        raise OpsError(f"{error}: set planning.provisioning_minutes by hand", ExitCode.USAGE) from None
    except ConfigError as error:
        raise OpsError(f"the measured config would be invalid, nothing written: {error}", ExitCode.USAGE) from None
    return (
        f"planning.provisioning_minutes: {minutes} (p95 {overall.p95:.1f} min over {samples} scale-outs on "
        f"{measured['where']}, measured {measured['measured_at']})"
    )


def _set_provisioning(minutes: int, measured: CommentedMap) -> Any:
    def change(document: Any) -> None:
        planning = document.setdefault("planning", CommentedMap())
        planning.pop("provisioning_measured", None)
        if "provisioning_minutes" in planning:
            planning["provisioning_minutes"] = minutes  # in place: its position and comment stay
            position = list(planning).index("provisioning_minutes") + 1
            planning.insert(position, "provisioning_measured", measured)
        else:
            planning["provisioning_minutes"] = minutes
            planning["provisioning_measured"] = measured

    return change
