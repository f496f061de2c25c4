"""Moving traffic between primary and canary (UpdateEndpointWeightsAndCapacities), in percentages, each change
confirmed by describing the endpoint until SageMaker reports it in effect."""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from config import environment_label
from config.variant_lookup import share_percent
from ops.operations.aws import AwsClients
from ops.operations.busy_endpoint import update_weights_and_capacities
from ops.operations.endpoint import read_endpoint
from ops.operations.errors import ExitCode, OpsError, explain
from ops.operations.guard import Verdict, check_canary
from ops.operations.interrupts import exit_code
from ops.operations.output import Console, percent, seconds
from ops.operations.pool_capacity import PoolCapacity, UnknownCapacity
from ops.operations.rollback_capacity import (
    TRAFFIC_WINDOW_SECONDS,
    Floor,
    busiest_minute,
    carry_return,
    carry_rollback,
    keep_floor,
    warn_if_short,
)
from ops.operations.runtime_hook import runtime_hook
from ops.operations.scaling import scalable_target
from ops.operations.scaling_suspension import dynamic_scaling_suspended
from ops.operations.shift_plan import (
    ShiftPlan,
    Target,
    dry_run_lines,
    plan_steps,
    planned_duration,
    resume_command,
    rollback_command,
)
from ops.operations.waiting import Timing, custom_waiter, wait


class Refused(Exception):
    """The guard said no; str() says why."""


def set_canary_weight(sagemaker: Any, target: Target, weight: float, console: Console, timing: Timing) -> None:
    """The weights, sent once the endpoint takes changes (ops.operations.busy_endpoint), then confirmed in effect."""
    weights = {target.canary: float(weight), target.primary: 100.0 - weight}
    desired = [{"VariantName": n, "DesiredWeight": w} for n, w in weights.items()]
    what = f"set canary {target.canary} to {percent(weight)}"
    update_weights_and_capacities(sagemaker, target.endpoint, desired, console, timing, target.patience, what)
    in_effect = " && ".join(
        f"length(ProductionVariants[?VariantName=='{name}' && CurrentWeight == `{json.dumps(weight)}`]) == `1`"
        for name, weight in weights.items()
    )
    _wait_for_endpoint(sagemaker, target, ("WeightsInEffect", in_effect), ("weights", "Weight"), console, timing)


def rollback(clients: AwsClients, target: Target, console: Console, timing: Timing, floor: Floor) -> None:
    """Canary weight 0 at once; then the primary raised to what the live traffic needs (ops.operations.rollback_capacity)."""
    live = read_endpoint(clients.sagemaker, target.endpoint, target.env_name)
    live.variant(target.primary)
    before = live.share(target.canary)
    console.line(f"Rolling back {target.endpoint}: canary {percent(before)} → 0%, primary → 100%")
    try:
        with dynamic_scaling_suspended(clients.autoscaling, target, console):  # resumed on an interrupt too
            set_canary_weight(clients.sagemaker, target, 0, console, timing)
            console.ok(f"all traffic on {target.primary}; {target.canary} weight 0 is in effect")
            carry_rollback(clients, target, floor, console)
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM or SIGHUP (ops/operations/interrupts.py)
        _, stands = _standing(clients.sagemaker, target)
        raise OpsError(
            f"interrupted: the rollback of {target.endpoint} ({target.env_name}) did not finish; it stands at "
            f"{stands}\n  finish it: {rollback_command(target)}",
            exit_code(stop),
        ) from None


def shift(
    clients: AwsClients,
    target: Target,
    plan: ShiftPlan,
    console: Console,
    timing: Timing,
    log: Path | None = None,
    dry_run: bool = False,
) -> None:
    """The shift, step by step; with `dry_run`, the plan only (the endpoint is read, nothing changed)."""
    live = read_endpoint(clients.sagemaker, target.endpoint, target.env_name)
    live.variant(target.primary)
    start = live.share(target.canary)
    if start == plan.weight:
        console.line(f"canary {target.canary} already has {percent(start)} of traffic: nothing to do")
        return
    route = plan_steps(start, plan.weight, plan.steps, plan.first_step)
    guarded = plan.weight > start  # moving traffic away from the canary is the safe direction
    console.line(f"Shifting {target.endpoint}: canary {' → '.join(percent(w) for w in [start, *route])}")
    console.line(f"  {planned_duration(route, plan)}")
    if guarded:
        console.line(f"  guard: {_guard_description(target, plan)}")
    if dry_run:
        console.line("dry run, nothing changed; the shift would, step by step:")
        for line in dry_run_lines(start, route, plan, guarded):
            console.line(line)
        return
    if guarded and plan.override is not None:
        _log_override(target, plan, console, log)
    _run(clients, target, plan, route, (start, guarded), console, timing)
    console.ok(f"shift complete: {target.canary} has {percent(plan.weight)} of traffic")


def _guard_description(target: Target, plan: ShiftPlan) -> str:
    policy = plan.policy
    return (
        f"alarms on {target.canary} or the endpoint, canary 5XX at most {policy.max_5xx_margin:g} pp above the "
        f"primary's, canary TTFT p95 at most +{policy.max_ttft_increase_percent:g} % or "
        f"+{policy.min_ttft_increase_ms:g} ms above the primary's; before a step from above 0%: at least "
        f"{policy.min_invocations} canary invocations per {seconds(policy.window_seconds)} and as many streams on "
        f"each variant for the TTFT comparison; canary capacity for its new share; "
        f"hold {seconds(plan.hold_seconds)} after each step, checked every {seconds(plan.check_seconds)}"
    )


def _run(
    clients: AwsClients,
    target: Target,
    plan: ShiftPlan,
    route: list[float],
    begin: tuple[float, bool],
    console: Console,
    timing: Timing,
) -> None:
    """The steps; a refusal or an AWS error puts the weight back where it started, Ctrl-C leaves it."""
    start, guarded = begin
    current = start
    try:
        for weight in route:
            if guarded:
                _require_healthy(clients.cloudwatch, target, plan, console, evidence=current > 0)
                _require_capacity(clients, target, plan, weight, console, timing)
            if plan.keep_rollback_floor:  # the primary at what a full rollback needs, before the step
                coming = keep_floor(clients, target, plan.floor, console)
                if coming:
                    _wait_for_instances(clients.sagemaker, target, target.primary, coming, console, timing)
            console.line(f"step: canary {percent(current)} → {percent(weight)}")
            set_canary_weight(clients.sagemaker, target, weight, console, timing)
            current = weight
            console.ok(f"canary at {percent(weight)}, primary at {percent(100 - weight)}")
            if plan.hold_seconds and weight and not plan.keep_rollback_floor:
                warn_if_short(clients, target, plan.floor, console)
            _hold(clients.cloudwatch, target, plan, guarded, console, timing)
    except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM or SIGHUP (ops/operations/interrupts.py)
        raise _interrupted(clients.sagemaker, target, plan, exit_code(stop)) from None
    except (Refused, OpsError, ClientError, BotoCoreError) as stopped:
        problem = stopped if isinstance(stopped, Refused | OpsError) else explain(stopped)
        code = ExitCode.REFUSED if isinstance(problem, Refused) else problem.exit_code
        if current == start:
            raise OpsError(f"shift stopped: {problem}; no weight was changed", code) from None
        outcome = _return_to(clients, target, plan, start, console, timing)
        raise OpsError(f"shift stopped at canary {percent(current)}: {problem}; {outcome}", code) from None


def _interrupted(sagemaker: Any, target: Target, plan: ShiftPlan, code: int) -> OpsError:
    """Interrupted mid-shift: where the weights stand, read back (a change already sent still takes effect),
    and how to go on or back."""
    now, stands = _standing(sagemaker, target)
    if now == plan.weight:
        resume = (
            f"nothing left to shift, the hold after the last step was cut short (`bin/ops status {target.env_name}`)"
        )
    else:
        resume = resume_command(target, plan, now)
    return OpsError(
        f"interrupted: {target.endpoint} ({target.env_name}) stands at {stands}; nothing more was changed\n"
        f"  resume:    {resume}\n"
        f"  roll back: {rollback_command(target)}",
        code,
    )


def _standing(sagemaker: Any, target: Target) -> tuple[float | None, str]:
    """The canary's share read back now (None: unknown), and the weights in words."""
    try:
        live = read_endpoint(sagemaker, target.endpoint, target.env_name)
        now: float | None = live.share(target.canary)
        desired = share_percent(live.variant(target.canary).desired_weight, (v.desired_weight for v in live.variants))
        stands = f"canary {percent(now or 0)}, primary {percent(100 - (now or 0))} (read back just now)"
        if desired != now:
            stands += f"; SageMaker is still applying canary {percent(desired)} (endpoint {live.status})"
    except (OpsError, ClientError, BotoCoreError) as error:
        return None, f"weights unknown: reading them back failed ({explain(error)}); `bin/ops status {target.env_name}`"
    return now, stands


SKIPPED_BY_OVERRIDE = (
    "the evidence checks (minimum canary invocations, enough streams to compare TTFT) and the capacity check"
)


def _log_override(target: Target, plan: ShiftPlan, console: Console, log: Path | None) -> None:
    """An override is said out loud and written down: who skipped what, when, on which endpoint, why."""
    console.warn(
        f"override: skipping {SKIPPED_BY_OVERRIDE}; alarms, the 5XX margin and the TTFT margin (where "
        "there is enough to compare) still apply"
    )
    console.warn(f"reason given: {plan.override}")
    if log is None:
        return
    entry = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "user": getpass.getuser(),
             "endpoint": target.endpoint, "canary_weight": plan.weight, "skipped": SKIPPED_BY_OVERRIDE,
             "reason": plan.override}  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        out.write(json.dumps(entry) + "\n")
    console.warn(f"logged to {log}")


def _hold(cloudwatch: Any, target: Target, plan: ShiftPlan, guarded: bool, console: Console, timing: Timing) -> None:
    remaining = plan.hold_seconds
    while remaining > 0:
        pause = min(plan.check_seconds, remaining)
        timing.sleep(pause)
        remaining -= pause
        if guarded:
            prefix = f"hold, {seconds(remaining)} left: "
            _require_healthy(cloudwatch, target, plan, console, evidence=False, prefix=prefix)


def _require_healthy(
    cloudwatch: Any, target: Target, plan: ShiftPlan, console: Console, *, evidence: bool, prefix: str = ""
) -> Verdict:
    """Alarms and the margins always; from above 0 %, also the evidence (unless overridden). ✓ only for checks
    that ran; each one that did not is named on a `!` line."""
    required = evidence and plan.override is None
    variants = (target.endpoint, target.canary, target.primary)
    verdict = check_canary(cloudwatch, *variants, plan.policy, require_evidence=required, require_latency=required)
    if not verdict.healthy:
        for problem in verdict.problems:
            console.fail(f"{prefix}{problem}")
        hint = runtime_hook().evidence_hint(target.env_name, verdict.problems, plan.policy.min_invocations)
        raise Refused("; ".join(verdict.problems) + hint)
    console.ok(f"{prefix}guard passed ({verdict.summary})")
    for skipped in verdict.not_checked:
        console.warn(f"{prefix}not checked: {skipped}")
    return verdict


def _require_capacity(
    clients: AwsClients, target: Target, plan: ShiftPlan, weight: float, console: Console, timing: Timing
) -> None:
    """The canary's instances in service, each at its own type's planning.capacity, must serve its new share
    of the busiest minute of the last five, counted as a rollback counts it (an average over the window, which
    ends in the minute still filling, would let through a step the same minute's rollback could not carry)."""
    if plan.override is not None:
        return
    canary = read_endpoint(clients.sagemaker, target.endpoint, target.env_name).variant(target.canary)
    try:
        pools = PoolCapacity.of(canary, plan.capacity_per_instance)
    except UnknownCapacity as error:
        raise Refused(
            f"{error}, so the canary's capacity is unknown: add one to {environment_label(target.env_name)}"
        ) from None
    busiest = busiest_minute(clients.cloudwatch, target.endpoint, (target.primary, target.canary))
    needed_rate = busiest * weight / 100
    in_service = canary.current_instance_count or 0
    needed = max(1, pools.instances_for(needed_rate))
    if in_service >= needed:
        return
    each = pools.describe(in_service) if pools.mixed else f"{pools.per_instance[pools.new_type]:,.0f} each"
    shortfall = (
        f"{percent(weight)} of the busiest minute's {busiest:,.0f} invocations (last {seconds(TRAFFIC_WINDOW_SECONDS)}) "
        f"is {needed_rate:,.0f}/min, but {in_service} canary instance(s) in service serve {pools.serves():,.0f}/min "
        f"({each}, planning.capacity)"
    )
    if not plan.raise_capacity:
        raise Refused(
            f"{shortfall}: rerun with --raise-canary-capacity (sets {needed} instances and waits for InService), "
            f"or raise the canary's capacity yourself first"
        )
    shown = f"{needed} instances ({pools.describe(needed)})" if pools.mixed else f"{needed} × {pools.new_type}"
    _raise_canary(clients, target, shown, needed, console, timing)


def _raise_canary(
    clients: AwsClients, target: Target, shown: str, count: int, console: Console, timing: Timing
) -> None:
    """DesiredInstanceCount through the same call as the weights, within the autoscaler's range."""
    scalable = scalable_target(clients.autoscaling, target.endpoint, target.canary)
    if scalable and scalable["MaxCapacity"] < count:
        raise Refused(
            f"the canary needs {count} instances but its autoscaling max_capacity is {scalable['MaxCapacity']}: "
            "raise autoscaling.canary.max_capacity and deploy first"
        )
    console.line(f"raising {target.canary} to {shown} before the step")
    desired = [{"VariantName": target.canary, "DesiredInstanceCount": count}]
    what = f"raise {target.canary} to {count} instances"
    update_weights_and_capacities(clients.sagemaker, target.endpoint, desired, console, timing, target.patience, what)
    _wait_for_instances(clients.sagemaker, target, target.canary, count, console, timing)


def _wait_for_instances(
    sagemaker: Any, target: Target, variant: str, count: int, console: Console, timing: Timing
) -> None:
    in_service = f"length(ProductionVariants[?VariantName=='{variant}' && CurrentInstanceCount >= `{count}`]) == `1`"
    waiter = ("InstancesInService", in_service)
    _wait_for_endpoint(sagemaker, target, waiter, ("instances", "InstanceCount"), console, timing)
    console.ok(f"{variant} has {count} instances in service")


def _wait_for_endpoint(
    sagemaker: Any, target: Target, waiter: tuple[str, str], shown: tuple[str, str], console: Console, timing: Timing
) -> None:
    """DescribeEndpoint until it is InService with the waiter's JMESPath condition true (Failed stops it),
    printing each variant's Current→Desired of the `shown` field at every poll."""
    name, condition = waiter
    done = f"EndpointStatus == 'InService' && {condition}"
    acceptors = [
        {"matcher": "path", "argument": done, "expected": True, "state": "success"},
        {"matcher": "path", "argument": "EndpointStatus", "expected": "Failed", "state": "failure"},
    ]
    label, field = shown

    def describe(response: dict[str, Any]) -> str:
        pairs = ", ".join(
            f"{v['VariantName']} {v.get(f'Current{field}', 0):g}→{v.get(f'Desired{field}', 0):g}"
            for v in response.get("ProductionVariants", [])
        )
        return f"{response['EndpointStatus']}; {label} {pairs}"

    polled = custom_waiter(name, "DescribeEndpoint", acceptors)
    wait(polled, sagemaker.describe_endpoint, describe, console, timing, EndpointName=target.endpoint)


def _return_to(
    clients: AwsClients, target: Target, plan: ShiftPlan, weight: float, console: Console, timing: Timing
) -> str:
    """The canary back at `weight`, then the primary sized for its share as a rollback sizes it."""
    console.line(f"rolling canary back to {percent(weight)}")
    try:
        set_canary_weight(clients.sagemaker, target, weight, console, timing)
    except (ClientError, BotoCoreError) as error:
        failure = explain(error)
        return f"rolling back to {percent(weight)} ALSO failed ({failure}): run `bin/ops rollback {target.env_name}`"
    primary = carry_return(clients, target, plan.floor, weight, console)
    return f"canary weight rolled back to {percent(weight)}{primary}"
