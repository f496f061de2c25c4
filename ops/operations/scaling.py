"""Application Auto Scaling of endpoint variants: read exactly what is registered, take it off, put it back.

The deploy restores the live snapshot, never the config's idea of scaling, which may differ from what is live.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from config.access import scaling_tags
from ops.operations.errors import ExitCode, OpsError, explain
from ops.operations.output import Console

SERVICE_NAMESPACE = "sagemaker"
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
TARGET_FIELDS = ("MinCapacity", "MaxCapacity", "SuspendedState")
POLICY_FIELDS = (
    "PolicyName",
    "PolicyType",
    "TargetTrackingScalingPolicyConfiguration",
    "StepScalingPolicyConfiguration",
    "PredictiveScalingPolicyConfiguration",
)
SCHEDULE_FIELDS = ("ScheduledActionName", "Schedule", "Timezone", "StartTime", "EndTime", "ScalableTargetAction")


def resource_id(endpoint: str, variant: str) -> str:
    return f"endpoint/{endpoint}/variant/{variant}"


def target_key(endpoint: str, variant: str) -> dict[str, str]:
    """The parameters that name a variant's scalable target in every Application Auto Scaling call."""
    return {
        "ServiceNamespace": SERVICE_NAMESPACE,
        "ResourceId": resource_id(endpoint, variant),
        "ScalableDimension": SCALABLE_DIMENSION,
    }


def scalable_target(autoscaling: Any, endpoint: str, variant: str) -> dict[str, Any] | None:
    """The variant's scalable target as DescribeScalableTargets gives it; None when it is not registered."""
    found = autoscaling.describe_scalable_targets(
        ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=[resource_id(endpoint, variant)]
    )["ScalableTargets"]
    return next((t for t in found if t["ScalableDimension"] == SCALABLE_DIMENSION), None)


def register_target(autoscaling: Any, endpoint: str, variant: str, **changes: Any) -> None:
    """RegisterScalableTarget with the endpoint's tag it has: the Operator policy changes only tagged targets."""
    autoscaling.register_scalable_target(**target_key(endpoint, variant), **changes, Tags=scaling_tags(endpoint))


@dataclass
class VariantScaling:
    variant: str
    target: dict[str, Any]
    policies: list[dict[str, Any]] = field(default_factory=list)
    scheduled_actions: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"{self.variant}: min {self.target['MinCapacity']}, max {self.target['MaxCapacity']}, "
            f"{len(self.policies)} policies, {len(self.scheduled_actions)} scheduled actions"
        )


@dataclass
class ScalingSnapshot:
    endpoint: str
    variants: list[VariantScaling]

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> ScalingSnapshot:
        try:
            raw = json.loads(path.read_text())
            return cls(raw["endpoint"], [VariantScaling(**v) for v in raw["variants"]])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise OpsError(f"cannot read scaling snapshot {path}: {error}", ExitCode.USAGE) from None


def read_scaling(autoscaling: Any, endpoint: str, variants: list[str]) -> ScalingSnapshot:
    """What Application Auto Scaling has registered for these variants (unregistered ones are left out)."""
    ids = {resource_id(endpoint, v): v for v in variants}
    if not ids:  # an empty ResourceIds filter would list every target in the account
        return ScalingSnapshot(endpoint, [])

    def listed(operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
        pages = autoscaling.get_paginator(operation).paginate(ServiceNamespace=SERVICE_NAMESPACE, **params)
        return [item for page in pages for item in page[key]]

    found = []
    for target in listed("describe_scalable_targets", "ScalableTargets", ResourceIds=list(ids)):
        if target["ScalableDimension"] != SCALABLE_DIMENSION:
            continue
        rid = target["ResourceId"]
        policies = listed("describe_scaling_policies", "ScalingPolicies", ResourceId=rid)
        schedules = listed("describe_scheduled_actions", "ScheduledActions", ResourceId=rid)
        found.append(
            VariantScaling(
                variant=ids[rid],
                target=_pick(target, TARGET_FIELDS),
                policies=[_pick(p, POLICY_FIELDS) for p in policies],
                scheduled_actions=[_pick(s, SCHEDULE_FIELDS) for s in schedules],
            )
        )
    return ScalingSnapshot(endpoint, sorted(found, key=lambda v: variants.index(v.variant)))


def remove_scaling(autoscaling: Any, snapshot: ScalingSnapshot, console: Console) -> None:
    """Schedules and policies deleted explicitly, then deregistered: nothing left behind if deregistering fails."""
    for scaling in snapshot.variants:
        common = target_key(snapshot.endpoint, scaling.variant)
        for action in scaling.scheduled_actions:
            autoscaling.delete_scheduled_action(ScheduledActionName=action["ScheduledActionName"], **common)
        for policy in scaling.policies:
            autoscaling.delete_scaling_policy(PolicyName=policy["PolicyName"], **common)
        autoscaling.deregister_scalable_target(**common)
        console.ok(f"deregistered scaling of {scaling.describe()}")


def restore_scaling(autoscaling: Any, snapshot: ScalingSnapshot, console: Console, saved_at: Path | None) -> None:
    """Put every target, policy and schedule back; try each even after one fails, then report all."""
    failures = []
    put_policy, put_schedule = autoscaling.put_scaling_policy, autoscaling.put_scheduled_action
    for scaling in snapshot.variants:
        name, common = scaling.variant, target_key(snapshot.endpoint, scaling.variant)
        register = functools.partial(register_target, autoscaling, snapshot.endpoint, name)
        steps = [(f"{name} target", register, scaling.target)]
        steps += [(f"{name} policy {p['PolicyName']}", put_policy, {**common, **p}) for p in scaling.policies]
        actions = scaling.scheduled_actions
        steps += [(f"{name} schedule {a['ScheduledActionName']}", put_schedule, {**common, **a}) for a in actions]
        failed_before = len(failures)
        for label, call, params in steps:
            try:
                call(**params)
            except (ClientError, BotoCoreError) as error:
                failures.append(f"{label} ({explain(error)})")
        if len(failures) == failed_before:
            console.ok(f"restored scaling of {scaling.describe()}")
    if failures:
        where = f"; the snapshot is in {saved_at}" if saved_at else ""
        raise OpsError(
            f"scaling NOT fully restored on {snapshot.endpoint}: {'; '.join(failures)}{where} - "
            f"retry with `bin/ops restore-scaling ENV {saved_at or 'SNAPSHOT'}` now",
            ExitCode.SCALING_NOT_RESTORED,
        )


def _pick(source: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """Keep the fields the put/register calls accept; timestamps become ISO strings for the JSON file."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in source.items() if k in fields}
