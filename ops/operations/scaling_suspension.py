"""Dynamic scaling held still while a rollback works, and given back after.

A scale-in or -out puts the endpoint in Updating, which refuses the rollback's weight change. RegisterScalableTarget
with `SuspendedState` Dynamic{In,Out}Suspended "true" suspends policy-triggered activities; parameters not given
are not changed (botocore application-autoscaling 2016-02-06; user guide "Suspend and resume scaling").
Scheduled scaling and the bounds are left alone; a target suspended before stays suspended.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.operations.errors import explain
from ops.operations.output import Console
from ops.operations.scaling import SCALABLE_DIMENSION, SERVICE_NAMESPACE, register_target, resource_id

if TYPE_CHECKING:
    from ops.operations.shift_plan import Target

DYNAMIC = ("DynamicScalingInSuspended", "DynamicScalingOutSuspended")


@contextmanager
def dynamic_scaling_suspended(autoscaling: Any, target: Target, console: Console) -> Iterator[None]:
    """Both variants' dynamic scaling suspended inside the block and resumed after; failing to suspend is a
    warning (the rollback retries through a busy endpoint anyway)."""
    try:
        suspended = _suspend(autoscaling, target, console)
    except (ClientError, BotoCoreError) as error:
        console.warn(f"dynamic scaling NOT suspended ({explain(error)}): the autoscaler may race the rollback")
        suspended = []
    try:
        yield
    finally:
        _resume(autoscaling, target, suspended, console)


def _suspend(autoscaling: Any, target: Target, console: Console) -> list[str]:
    """The variants whose dynamic scaling this run suspended (not those suspended already, nor unregistered)."""
    ids = {resource_id(target.endpoint, v): v for v in (target.primary, target.canary)}
    found = autoscaling.describe_scalable_targets(ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=list(ids))
    running = {
        ids[t["ResourceId"]]
        for t in found["ScalableTargets"]
        if t["ScalableDimension"] == SCALABLE_DIMENSION
        and not all((t.get("SuspendedState") or {}).get(k) for k in DYNAMIC)
    }
    chosen = [v for v in ids.values() if v in running]
    for variant in chosen:
        _register(autoscaling, target.endpoint, variant, suspended=True)
    if chosen:
        console.line(
            f"suspended dynamic scaling (in and out) of {', '.join(chosen)} while the rollback works, so target "
            "tracking cannot put the endpoint in Updating under it; it is resumed at the end"
        )
    return chosen


def _resume(autoscaling: Any, target: Target, variants: list[str], console: Console) -> None:
    for variant in variants:
        try:
            _register(autoscaling, target.endpoint, variant, suspended=False)
            console.ok(f"dynamic scaling of {variant} resumed")
        except (ClientError, BotoCoreError) as error:
            console.warn(
                f"dynamic scaling of {variant} is STILL SUSPENDED ({explain(error)}): resume it with `aws "
                f"application-autoscaling register-scalable-target --service-namespace {SERVICE_NAMESPACE} "
                f"--resource-id {resource_id(target.endpoint, variant)} --scalable-dimension {SCALABLE_DIMENSION} "
                "--suspended-state DynamicScalingInSuspended=false,DynamicScalingOutSuspended=false`"
            )


def _register(autoscaling: Any, endpoint: str, variant: str, *, suspended: bool) -> None:
    register_target(autoscaling, endpoint, variant, SuspendedState=dict.fromkeys(DYNAMIC, suspended))
