"""A traffic shift's plan: the route, the checks, the duration, and the commands that resume or undo it.

The resume command is rebuilt from the plan: only options that differ from their defaults, only steps ahead.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ops.operations.errors import ExitCode, OpsError
from ops.operations.guard import GuardPolicy
from ops.operations.output import parse_duration, percent, seconds
from ops.operations.target import Target

if TYPE_CHECKING:
    from ops.operations.rollback_capacity import Floor

DEFAULT_VARIANTS = ("canary", "primary")  # what --canary and --primary default to


@dataclass(frozen=True)
class ShiftPlan:
    weight: float
    steps: tuple[float, ...] = ()
    hold_seconds: float = 0
    check_seconds: float = 60
    policy: GuardPolicy = GuardPolicy()
    first_step: float | None = None  # where a shift from 0 % starts when no --step says (config's share)
    # Requests per minute one instance serves, by instance type (config `planning.capacity`).
    capacity_per_instance: Mapping[str, float] = field(default_factory=dict)
    raise_capacity: bool = False  # add canary instances before a step instead of refusing
    override: str | None = None  # the operator's reason to skip the evidence and capacity checks
    # The primary's sizing for a rollback (ops.operations.rollback_capacity): for a stopped shift, the holds'
    # warning, and keep_rollback_floor's raise before every step.
    floor: Floor | None = None
    keep_rollback_floor: bool = False


def default_check_seconds(hold: float) -> float:
    """How often a hold is checked when --check-every is not given: 60 s, or the hold if shorter."""
    return min(60.0, hold) if hold else 60.0


def plan_steps(start: float, target: float, steps: Iterable[float], first_step: float | None = None) -> list[float]:
    """The weights to pass through, ending at the target. A step off the way is refused, not dropped (a hold was
    asked there). From 0 % there is no evidence for a large share: the way starts at the lowest step, or at
    `first_step` (the config's share), never jumping straight to a larger target."""
    low, high = sorted((start, target))
    outside = sorted({s for s in steps if not low <= s <= high})
    if outside:
        raise OpsError(
            f"--step {', '.join(percent(s) for s in outside)} is outside the way from {percent(start)} to "
            f"{percent(target)}: drop it or change --canary-weight",
            ExitCode.USAGE,
        )
    between = sorted({s for s in steps if low < s < high}, reverse=target < start)
    if start == 0 and not between and first_step is not None and 0 < first_step < target:
        between = [first_step]
    return [*between, target]


def planned_duration(route: list[float], plan: ShiftPlan) -> str:
    """What the shift will take, said before it starts: every step is followed by a hold."""
    count = len(route)
    changes = f"{count} weight change{'s' if count > 1 else ''}"
    if not plan.hold_seconds:
        return f"duration: no hold, only the time SageMaker takes to put {changes} into effect"
    raising = ", and to launch any canary instances --raise-canary-capacity adds" if plan.raise_capacity else ""
    if plan.keep_rollback_floor:
        raising += ", and any primary instances --keep-rollback-floor adds"
    return (
        f"duration: at least {seconds(count * plan.hold_seconds)}: {count} step{'s' if count > 1 else ''} × "
        f"{seconds(plan.hold_seconds)} hold (the last hold watches the canary at {percent(route[-1])}), plus the "
        f"time SageMaker takes to put {changes} into effect{raising}"
    )


def step_checks(previous: float, weight: float, plan: ShiftPlan, guarded: bool) -> list[str]:
    if not guarded:
        return ["nothing (traffic moves away from the canary: never guarded)"]
    checks = ["alarms", "the 5XX and TTFT margins (where there is traffic to compare)"]
    policy = plan.policy
    if previous > 0 and plan.override is None:
        window = seconds(policy.window_seconds)
        checks.append(f"evidence: {policy.min_invocations} canary invocations in {window}")
        checks.append(f"a TTFT comparison: {policy.min_invocations} streams on each variant in {window}")
    if plan.override is None:
        checks.append(f"canary capacity for {percent(weight)}")
    return checks


def dry_run_lines(start: float, route: list[float], plan: ShiftPlan, guarded: bool) -> list[str]:
    hold = ""
    if plan.hold_seconds:
        watched = f", checking alarms and both margins every {seconds(plan.check_seconds)}" if guarded else ""
        hold = f"; then hold {seconds(plan.hold_seconds)}{watched}"
    lines = []
    previous = start
    for number, weight in enumerate(route, start=1):
        checks = "; ".join(step_checks(previous, weight, plan, guarded))
        lines.append(f"  {number}. canary {percent(previous)} → {percent(weight)}, checked first: {checks}{hold}")
        previous = weight
    return lines


def resume_command(target: Target, plan: ShiftPlan, now: float | None) -> str:
    """`bin/ops shift …` that goes on from `now` with the same options (steps already passed dropped)."""
    if now is None:
        ahead = list(plan.steps)
    else:
        low, high = sorted((now, plan.weight))
        ahead = sorted({s for s in plan.steps if low < s < high}, reverse=plan.weight < now)
    words = ["bin/ops", "shift", target.env_name, "--canary-weight", f"{plan.weight:g}"]
    for step in ahead:
        words += ["--step", f"{step:g}"]
    words += _options(plan)
    words += _variant_options(target)
    return shlex.join(words)


def rollback_command(target: Target) -> str:
    return shlex.join(["bin/ops", "rollback", target.env_name, *_variant_options(target)])


def _options(plan: ShiftPlan) -> list[str]:
    words: list[str] = []
    if plan.hold_seconds:
        words += ["--hold", _duration(plan.hold_seconds)]
    if plan.check_seconds != default_check_seconds(plan.hold_seconds):
        words += ["--check-every", _duration(plan.check_seconds)]
    policy, default = plan.policy, GuardPolicy()
    for option, value, usual in (
        ("--max-5xx-margin", policy.max_5xx_margin, default.max_5xx_margin),
        ("--max-ttft-increase", policy.max_ttft_increase_percent, default.max_ttft_increase_percent),
        ("--min-ttft-increase-ms", policy.min_ttft_increase_ms, default.min_ttft_increase_ms),
        ("--min-canary-invocations", policy.min_invocations, default.min_invocations),
    ):
        if value != usual:
            words += [option, f"{value:g}"]
    if policy.window_seconds != default.window_seconds:
        words += ["--error-window", _duration(policy.window_seconds)]
    if plan.raise_capacity:
        words.append("--raise-canary-capacity")
    if plan.keep_rollback_floor:
        words.append("--keep-rollback-floor")
    if plan.override is not None:
        words += ["--override", plan.override]
    return words


def _variant_options(target: Target) -> list[str]:
    words: list[str] = []
    names = (target.canary, target.primary)
    for option, name, usual in zip(("--canary", "--primary"), names, DEFAULT_VARIANTS, strict=True):
        if name != usual:
            words += [option, name]
    if target.region:
        words += ["--region", target.region]
    return words


def _duration(value: float) -> str:
    """As the CLI prints durations when that reads back exactly, else plain seconds."""
    shown = seconds(value)
    return shown if parse_duration(shown) == value else f"{value:g}s"
