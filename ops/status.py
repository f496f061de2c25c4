"""`status`: what the endpoint is doing now, its scaling and its alarms, times in the operator's zone."""

from __future__ import annotations

import re
import textwrap
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from config import EnvironmentConfig, load_catalog
from config.physics import ceiling_if_known
from ops.alarms import firing_alarms
from ops.aws import AwsClients
from ops.endpoint import LiveEndpoint, read_endpoint
from ops.latency import first_token_times
from ops.output import Console, local_time, percent
from ops.scaling import VariantScaling, read_scaling

CRON_AT_FIXED_TIME = re.compile(r"^cron\((\d{1,2}) (\d{1,2}) ")
LATENCY_WINDOW_SECONDS = 300  # time to first token over the last five minutes, like the canary guard
STATUS_WIDTH = 119  # every line of `status` fits a 120-column terminal
AT_TIME = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")


def show_status(clients: AwsClients, cfg: EnvironmentConfig, console: Console) -> None:
    live = read_endpoint(clients.sagemaker, cfg.endpoint_name, cfg.name)
    console.line(f"Endpoint {live.name} ({clients.region}): {live.status}")
    console.line(f"  endpoint config in service: {live.config_name}")
    if live.pending_config_name:
        console.line(f"  deploying endpoint config:  {live.pending_config_name}")
    if live.failure_reason:
        console.line(f"  failure reason: {live.failure_reason}")
    console.line(f"  last modified: {console.time(live.last_modified)}")

    _show_variants(clients, live, console)
    _show_instances_by_type(live, console)

    console.heading("Autoscaling")
    registered = read_scaling(clients.autoscaling, live.name, [v.name for v in live.variants])
    by_variant = {s.variant: s for s in registered.variants}
    for variant in live.variants:
        scaling = by_variant.get(variant.name)
        if scaling is None:
            console.line(f"  {variant.name}: not registered")
        else:
            _show_scaling(scaling, console)

    _show_capacity(cfg, console)

    console.heading("Alarms in ALARM")
    alarms = firing_alarms(clients.cloudwatch, live.name)
    if not alarms:
        console.line("  none")
    for alarm in alarms:
        console.fail(f"{alarm.name}: {alarm.reason}")


def _show_variants(clients: AwsClients, live: LiveEndpoint, console: Console) -> None:
    console.heading("Variants")
    latency = first_token_times(
        clients.cloudwatch, live.name, [v.name for v in live.variants], LATENCY_WINDOW_SECONDS, ("p50", "p95")
    )
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
        current, desired = v.current_instance_count, v.desired_instance_count
        if current is not None and desired is not None and current < desired:
            console.warn(
                f"{v.name}: {current} of {desired} desired instances in service: scaling out, or capacity "
                "not arriving (`bin/ops scaling-history`)"
            )


def _show_instances_by_type(live: LiveEndpoint, console: Console) -> None:
    """Each variant's instances in service by type: with instance pools, DescribeEndpoint's
    InstancePools[].CurrentInstanceCount; priority 1 is provisioned first, fallbacks released first."""
    console.heading("Instances by type (instance pools by priority: 1 is preferred)")
    rows = []
    for v in live.variants:
        counts = v.instances_by_type()
        for priority, (instance_type, count) in enumerate(counts.items(), start=1):
            role = ("preferred" if priority == 1 else "fallback") if v.has_pools else "only type"
            shown = "not reported" if count is None else count
            rows.append([v.name, str(priority) if v.has_pools else "-", instance_type, shown, role])
    console.table(["VARIANT", "PRIORITY", "INSTANCE TYPE", "IN SERVICE", ""], rows)


def _show_capacity(cfg: EnvironmentConfig, console: Console) -> None:
    """planning.capacity for every type the config may run on, each beside its physical ceiling."""
    console.heading("Capacity the plan and the canary guard stand on (planning.capacity)")
    catalog = load_catalog()
    pool_types = [t for v in cfg.variants for t in v.instance_types]
    for instance_type in sorted({*cfg.planning.capacity, *pool_types}):
        capacity = cfg.planning.capacity.get(instance_type)
        ceiling = ceiling_if_known(cfg, catalog, instance_type)
        text = f"{instance_type}: {capacity.provenance() if capacity else 'no planning.capacity figure'}"
        if ceiling is None:
            text += "; no physical ceiling (the catalog lacks its GPU figures)"
        elif capacity is None:
            text += f"; physical ceiling {ceiling.describe()}"
        else:
            share = capacity.requests_per_minute / ceiling.requests_per_minute
            text += f"; {100 * share:.0f} % of its physical ceiling, {ceiling.describe()}"
        console.line(
            textwrap.fill(
                text, width=STATUS_WIDTH, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False
            )
        )
    provisioning = f"provisioning time (planning.provisioning_minutes): {cfg.planning.provisioning_provenance()}"
    console.line(textwrap.fill(provisioning, width=STATUS_WIDTH, initial_indent="  ", subsequent_indent="      "))


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
