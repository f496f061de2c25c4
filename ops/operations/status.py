"""`status`: the endpoint now, its scaling and alarms; text for a 120-column terminal or `--json`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer

from config import EnvironmentConfig, load_catalog
from config.deployed import load_acceptance
from config.domain.physics import Ceiling, ceiling_if_known
from config.endpoint_identity import EndpointIdentity
from config.schema import InstanceCapacity
from ops.operations.alarms import Alarm, firing_alarms
from ops.operations.aws import AwsClients
from ops.operations.endpoint import LiveEndpoint, LiveVariant, read_endpoint
from ops.operations.metric_window import FirstTokenTimes, ShedCount, first_token_times, shed_counts
from ops.operations.output import Console, local_time, percent
from ops.operations.scaling import VariantScaling, read_scaling

CRON_AT_FIXED_TIME = re.compile(r"^cron\((\d{1,2}) (\d{1,2}) ")
LATENCY_WINDOW_SECONDS = 300  # time to first token over the last five minutes, like the canary guard
STATUS_WIDTH = 119  # every line of `status` fits a 120-column terminal (Console wraps longer ones)
AT_TIME = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")


@dataclass(frozen=True)
class Status:
    live: LiveEndpoint
    region: str
    latency: dict[str, FirstTokenTimes]
    scaling: dict[str, VariantScaling | None]  # by variant; None: not registered with autoscaling
    alarms: list[Alarm]
    shed: dict[str, ShedCount]  # requests answered 429 by the admission check, same window as latency


def read_status(clients: AwsClients, identity: EndpointIdentity) -> Status:
    live = read_endpoint(clients.sagemaker, identity.endpoint_name, identity.name)
    names = [v.name for v in live.variants]
    latency = first_token_times(clients.cloudwatch, live.name, names, LATENCY_WINDOW_SECONDS, ("p50", "p95"))
    registered = {s.variant: s for s in read_scaling(clients.autoscaling, live.name, names).variants}
    alarms = firing_alarms(clients.cloudwatch, live.name)
    shed = shed_counts(clients.cloudwatch, live.name, names, LATENCY_WINDOW_SECONDS)
    return Status(live, clients.region, latency, {name: registered.get(name) for name in names}, alarms, shed)


def show_status(
    clients: AwsClients,
    identity: EndpointIdentity,
    cfg: EnvironmentConfig | None,
    console: Console,
    *,
    as_json: bool = False,
) -> None:
    """`cfg` None: the config failed validation; the live endpoint is shown, the planned capacity is not."""
    status = read_status(clients, identity)
    if as_json:
        typer.echo(json.dumps(status_document(status, identity, cfg), indent=2, default=str))
        return
    live = status.live
    console.line(f"Endpoint {live.name} ({status.region}): {live.status}")
    console.line(f"  endpoint config in service: {live.config_name}")
    if live.pending_config_name:
        console.line(f"  deploying endpoint config:  {live.pending_config_name}")
    if live.failure_reason:
        console.line(f"  failure reason: {live.failure_reason}")
    console.line(f"  last modified: {console.time(live.last_modified)}")

    _show_variants(status, console)
    _show_instances_by_type(live, console)

    console.heading("Autoscaling")
    for variant, scaling in status.scaling.items():
        if scaling is None:
            console.line(f"  {variant}: not registered")
        else:
            _show_scaling(scaling, console)

    console.heading("Capacity the plan and the canary guard stand on (planning.capacity)")
    if cfg is not None:
        _show_capacity(cfg, console)
        _show_acceptance(identity.name, console)
    else:
        console.line("  not shown: the config is invalid (the warning above names its first problem)")

    console.heading("Alarms in ALARM")
    if not status.alarms:
        console.line("  none")
    for alarm in status.alarms:
        console.fail(f"{alarm.name}: {alarm.reason}")


def _show_variants(status: Status, console: Console) -> None:
    console.heading("Variants")
    live, latency = status.live, status.latency
    console.table(
        ["VARIANT", "IMAGE TAG", "IN SERVICE/DESIRED", "WEIGHT now/desired", "SHARE",
         f"TTFT p50/p95 ({LATENCY_WINDOW_SECONDS // 60} min)"],
        [
            [
                v.name,
                _short_tag(v.image_tag),
                f"{_count(v.current_instance_count)}/{_count(v.desired_instance_count)}",
                f"{v.current_weight:g}/{v.desired_weight:g}",
                percent(live.share(v.name)),
                f"{latency[v.name].ms('p50')} / {latency[v.name].ms('p95')} ({latency[v.name].requests:.0f} streams)",
            ]
            for v in live.variants
        ],
    )  # fmt: skip
    for v in live.variants:
        if status.shed[v.name].shed:
            minutes = LATENCY_WINDOW_SECONDS // 60
            console.warn(f"{v.name}: shed (429, over capacity) {status.shed[v.name].line()} in {minutes} min")
        current, desired = v.current_instance_count, v.desired_instance_count
        if current is not None and desired is not None and current < desired:
            console.warn(
                f"{v.name}: {current} of {desired} desired instances in service: scaling out, or capacity "
                "not arriving (`bin/ops scaling-history`)"
            )


def _show_instances_by_type(live: LiveEndpoint, console: Console) -> None:
    console.heading("Instances by type (instance pools by priority: 1 is preferred)")
    rows = []
    for v in live.variants:
        counts = v.instances_by_type()
        for priority, (instance_type, count) in enumerate(counts.items(), start=1):
            role = ("preferred" if priority == 1 else "fallback") if v.has_pools else "only type"
            shown = "not reported" if count is None else count
            rows.append([v.name, str(priority) if v.has_pools else "-", instance_type, shown, role])
    console.table(["VARIANT", "PRIORITY", "INSTANCE TYPE", "IN SERVICE", ""], rows)
    for v in live.variants:
        if (timeout := v.provision_timeout_seconds) is not None:  # VariantInstanceProvisionTimeoutInSeconds
            console.line(f"  {v.name}: SageMaker tries the pools for up to {timeout} s per scale-out")


def _show_capacity(cfg: EnvironmentConfig, console: Console) -> None:
    for instance_type, capacity, ceiling in _capacities(cfg):
        text = f"{instance_type}: {capacity.provenance() if capacity else 'no planning.capacity figure'}"
        if ceiling is None:
            text += "; no physical ceiling (the catalog lacks its GPU figures)"
        elif capacity is None:
            text += f"; physical ceiling {ceiling.describe()}"
        else:
            share = capacity.requests_per_minute / ceiling.requests_per_minute
            text += f"; {100 * share:.0f} % of its physical ceiling, {ceiling.describe()}"
        console.line(f"  {text}")
    console.line(f"  provisioning time (planning.provisioning_minutes): {cfg.planning.provisioning_provenance()}")


def _show_acceptance(env_name: str, console: Console) -> None:
    """The last deploy went out with ACCEPT_ASSUMED_CAPACITY (config/deployed/<env>.json): say so, and why."""
    accepted = load_acceptance(env_name)
    if accepted is not None:
        console.warn(f"{accepted.describe()} (config/deployed/{env_name}.json, ops/pipeline/assumed_capacity.py)")


def _capacities(cfg: EnvironmentConfig) -> list[tuple[str, InstanceCapacity | None, Ceiling | None]]:
    catalog = load_catalog()
    types = sorted({*cfg.planning.capacity, *(t for v in cfg.variants for t in v.instance_types)})
    return [(t, cfg.planning.capacity.get(t), ceiling_if_known(cfg, catalog, t)) for t in types]


def status_document(status: Status, identity: EndpointIdentity, cfg: EnvironmentConfig | None) -> dict[str, Any]:
    """`status --json`: the text's facts as data, times ISO 8601 UTC; `capacity` and `provisioning_minutes`
    null when the config is invalid (`config_valid` false)."""
    live = status.live
    endpoint = {"name": live.name, "region": status.region, "status": live.status,
                "config_in_service": live.config_name, "deploying_config": live.pending_config_name,
                "failure_reason": live.failure_reason, "last_modified": _utc(live.last_modified)}  # fmt: skip
    capacity = {
        t: {"planning_capacity": figure.model_dump(mode="json") if figure else None,
            "provenance": figure.provenance() if figure else None,
            "physical_ceiling_per_minute": ceiling.requests_per_minute if ceiling else None}
        for t, figure, ceiling in _capacities(cfg)
    } if cfg is not None else None  # fmt: skip
    return {
        "environment": identity.name,
        "config_valid": cfg is not None,
        "endpoint": endpoint,
        "variants": [_variant_document(status, v) for v in live.variants],
        "autoscaling": {name: None if s is None else _scaling_document(s) for name, s in status.scaling.items()},
        "capacity": capacity,
        "provisioning_minutes": cfg.planning.provisioning_minutes if cfg is not None else None,
        "accepted_assumed_capacity": _acceptance_document(identity.name),
        "alarms_in_alarm": [
            {"name": a.name, "reason": a.reason, "variants": sorted(v or "(endpoint)" for v in a.variants)}
            for a in status.alarms
        ],
    }


def _variant_document(status: Status, v: LiveVariant) -> dict[str, Any]:
    latency, shed, window = status.latency[v.name], status.shed[v.name], LATENCY_WINDOW_SECONDS
    by_type = enumerate(v.instances_by_type().items(), start=1)
    return {
        "name": v.name, "image": v.image, "image_tag": v.image_tag,
        "instances": {"in_service": v.current_instance_count, "desired": v.desired_instance_count},
        "weight": {"current": v.current_weight, "desired": v.desired_weight},
        "share_percent": status.live.share(v.name),
        "instances_by_type": [
            {"instance_type": t, "priority": n if v.has_pools else None, "in_service": count} for n, (t, count) in by_type
        ],
        "instance_provision_timeout_seconds": v.provision_timeout_seconds,
        "ttft_ms": {**latency.percentiles, "streams": latency.requests, "window_seconds": window},
        "shed": {"requests": shed.shed, "invocations": shed.invocations, "window_seconds": window},
    }  # fmt: skip


def _acceptance_document(env_name: str) -> dict[str, Any] | None:
    accepted = load_acceptance(env_name)
    return None if accepted is None else {**accepted.__dict__, "types": list(accepted.types)}


def _scaling_document(scaling: VariantScaling) -> dict[str, Any]:
    target = scaling.target
    suspended = sorted(k for k, v in target.get("SuspendedState", {}).items() if v)
    actions = [{k: _utc(v) if isinstance(v, datetime) else v for k, v in a.items()} for a in scaling.scheduled_actions]
    return {"min": target["MinCapacity"], "max": target["MaxCapacity"], "suspended": suspended,
            "policies": scaling.policies, "scheduled_actions": actions}  # fmt: skip


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _short_tag(tag: str) -> str:
    """A digest cut to its first 12 hex digits (enough to tell images apart), a tag as it is."""
    return f"{tag[:19]}…" if tag.startswith("sha256:") and len(tag) > 19 else tag


def _count(count: int | None) -> str:
    return "-" if count is None else str(count)


def _show_scaling(scaling: VariantScaling, console: Console) -> None:
    suspended = [k for k, v in scaling.target.get("SuspendedState", {}).items() if v]
    note = f" (suspended: {', '.join(suspended)})" if suspended else ""
    console.line(f"  {scaling.variant}: min {scaling.target['MinCapacity']}, max {scaling.target['MaxCapacity']}{note}")
    for policy in scaling.policies:
        console.line(f"    policy {policy['PolicyName']} ({policy['PolicyType']}){_policy_target(policy)}")
    for action in scaling.scheduled_actions:
        console.line(f"    schedule {action['ScheduledActionName']}: {describe_schedule(action, console.zone)}")


def _policy_target(policy: dict[str, Any]) -> str:
    tracking = policy.get("TargetTrackingScalingPolicyConfiguration")
    if not tracking:
        return ""
    metric = tracking.get("PredefinedMetricSpecification", {}).get("PredefinedMetricType") or tracking.get(
        "CustomizedMetricSpecification", {}
    ).get("MetricName", "custom metric")
    return f": {metric} at {tracking['TargetValue']:g}"


def describe_schedule(action: dict[str, Any], zone: tzinfo) -> str:
    """The schedule as written, its time zone, and when that is on the operator's clock."""
    expression = action["Schedule"]
    zone_name = action.get("Timezone") or "UTC"
    text = f"{expression} {zone_name}"
    try:
        schedule_zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{text} (unknown time zone!)"
    if match := AT_TIME.match(expression):
        moment = datetime.fromisoformat(match.group(1)).replace(tzinfo=schedule_zone)
        text += f" = {local_time(moment, zone)}"
    elif match := CRON_AT_FIXED_TIME.match(expression):
        minute, hour = int(match.group(1)), int(match.group(2))
        today = datetime.now(schedule_zone).replace(hour=hour, minute=minute, second=0, microsecond=0)
        text += f", {today:%H:%M} there = {today.astimezone(zone):%H:%M %Z} here"
    target = action.get("ScalableTargetAction", {})
    bounds = ", ".join(f"{k.removesuffix('Capacity').lower()} {v}" for k, v in target.items())
    text += f" → {bounds}" if bounds else ""
    for key, label in (("StartTime", "from"), ("EndTime", "until")):
        if action.get(key):
            text += f" {label} {local_time(datetime.fromisoformat(action[key]), zone)}"
    return text
