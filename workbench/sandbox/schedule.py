"""`python -m workbench.sandbox schedule ENV WINDOW [--end]` and `python -m workbench.sandbox quota ENV TYPE=N`: the sandbox's
scheduled scaling and its account's instance quotas, so that `bin/ops scaling-history` has activities to read,
successful and failed (workbench/sandbox/scaling.py records them in the sandbox server).

moto never runs a scheduled action. `schedule` does what Application Auto Scaling does when one fires: it
sets the scalable target's minimum and maximum to the window's (at its end, back to the variant's own), with
RegisterScalableTarget against the sandbox; the server then scales the variant and records the activity.
`quota` lowers (or raises) the sandbox account's "<type> for endpoint usage" quota, so a window's scale-out
can fail the way SageMaker refuses one (ResourceLimitExceeded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from config import EnvironmentConfig, load_environment
from ops.operations.scaling import SCALABLE_DIMENSION, SERVICE_NAMESPACE, resource_id
from workbench.sandbox.scaling import quota_file
from workbench.sandbox.server import State


class ScheduleError(Exception):
    """A request the sandbox cannot carry out; its message says what to do instead."""


def window_ranges(cfg: EnvironmentConfig, window: str, end: bool) -> dict[str, tuple[int, int]]:
    """Variant -> (min, max) once `window` starts (or ends)."""
    ranges = {}
    for variant, scaling in cfg.autoscaling.items():
        for schedule in scaling.schedules:
            if schedule.name == window:
                ranges[variant] = (
                    (scaling.min_capacity, scaling.max_capacity)
                    if end
                    else (schedule.min_capacity, schedule.max_capacity)
                )
    if not ranges:
        known = sorted({s.name for scaling in cfg.autoscaling.values() for s in scaling.schedules})
        raise ScheduleError(f"{cfg.name} has no scheduled window {window!r}; its windows: {', '.join(known) or 'none'}")
    return ranges


def run_window(state: State, window: str, end: bool) -> list[str]:
    """Applies the window's ranges and returns one line per variant: what the scaling did."""
    cfg = load_environment(state.env, against_deployed=False)
    autoscaling = state.session().client("application-autoscaling", endpoint_url=state.moto_url)
    lines = []
    for variant, (minimum, maximum) in window_ranges(cfg, window, end).items():
        target = {
            "ServiceNamespace": SERVICE_NAMESPACE,
            "ResourceId": resource_id(state.endpoint, variant),
            "ScalableDimension": SCALABLE_DIMENSION,
        }
        before = latest_activity(autoscaling, target)
        autoscaling.register_scalable_target(**target, MinCapacity=minimum, MaxCapacity=maximum)
        after = latest_activity(autoscaling, target)
        changed = after is not None and (before is None or after["ActivityId"] != before["ActivityId"])
        outcome = f"{after['StatusCode']}: {after['StatusMessage']}" if changed else "its instance count was in range"
        lines.append(f"{variant}: min {minimum}, max {maximum}; {outcome}")
    return lines


def latest_activity(autoscaling: Any, target: dict[str, str]) -> dict[str, Any] | None:
    activities = autoscaling.describe_scaling_activities(**target)["ScalingActivities"]
    return activities[0] if activities else None


def set_quota(state_dir: Path, env_name: str, setting: str) -> str:
    """`TYPE=N`: the sandbox account's endpoint instance quota for TYPE from now on."""
    instance_type, _, count = setting.partition("=")
    if not instance_type.startswith("ml.") or not count.isdigit():
        raise ScheduleError(f"quota {setting!r}: expected TYPE=N, e.g. ml.g5.xlarge=20")
    path = quota_file(state_dir, env_name)
    quotas = json.loads(path.read_text()) if path.exists() else {}
    quotas[instance_type] = int(count)
    path.write_text(json.dumps(quotas, indent=2) + "\n")
    return f"sandbox: the account's '{instance_type} for endpoint usage' quota is now {count} instances"
