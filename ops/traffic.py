"""Moving traffic between the primary and the canary with UpdateEndpointWeightsAndCapacities.

Weights are written as percentages (canary N, primary 100 - N) and every change is confirmed by
describing the endpoint until SageMaker reports them in effect.
"""

from __future__ import annotations

import getpass
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from config import environment_label
from ops.aws import AwsClients
from ops.endpoint import read_endpoint
from ops.errors import ExitCode, OpsError, explain
from ops.guard import GuardPolicy, Verdict, check_canary
from ops.output import Console, percent, seconds
from ops.scaling import SERVICE_NAMESPACE, resource_id
from ops.waiting import Timing, custom_waiter, wait


@dataclass(frozen=True)
class Target:
    """Where the shift happens: one endpoint and the two variants traffic moves between."""

    env_name: str
    endpoint: str
    canary: str
    primary: str


class Refused(Exception):
    """The guard said no; str() says why."""


def plan_steps(start: float, target: float, steps: Iterable[float], first_step: float | None = None) -> list[float]:
    """The weights to pass through, in travel order, ending at the target.

    A step outside the way from `start` to `target` is refused rather than silently dropped: the
    operator asked for a hold there. From 0 % the canary has served nothing, so there is no evidence
    for a large share: the way starts at the lowest step, or at `first_step` (the config's canary
    share) when no step lies on it, and never jumps straight to a larger target.
    """
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


def set_canary_weight(sagemaker: Any, target: Target, weight: float, console: Console, timing: Timing) -> None:
    weights = {target.canary: float(weight), target.primary: 100.0 - weight}
    sagemaker.update_endpoint_weights_and_capacities(
        EndpointName=target.endpoint,
        DesiredWeightsAndCapacities=[{"VariantName": n, "DesiredWeight": w} for n, w in weights.items()],
    )
    wait(
        _weights_in_effect(weights),
        sagemaker.describe_endpoint,
        _describe_weights,
        console,
        timing,
        EndpointName=target.endpoint,
    )


def _weights_in_effect(weights: dict[str, float]) -> Any:
    in_effect = " && ".join(
        f"length(ProductionVariants[?VariantName=='{name}' && CurrentWeight == `{json.dumps(weight)}`]) == `1`"
        for name, weight in weights.items()
    )
    return _endpoint_waiter("WeightsInEffect", in_effect)


def _describe_weights(response: dict[str, Any]) -> str:
    weights = ", ".join(
        f"{v['VariantName']} {v.get('CurrentWeight', 0):g}→{v.get('DesiredWeight', 0):g}"
        for v in response.get("ProductionVariants", [])
    )
    return f"{response['EndpointStatus']}; weights {weights}"


def rollback(sagemaker: Any, target: Target, console: Console, timing: Timing) -> None:
    live = read_endpoint(sagemaker, target.endpoint, target.env_name)
    live.variant(target.primary)
    before = live.share(target.canary)
    console.line(f"Rolling back {target.endpoint}: canary {percent(before)} → 0%, primary → 100%")
    set_canary_weight(sagemaker, target, 0, console, timing)
    console.ok(f"all traffic on {target.primary}; {target.canary} weight 0 is in effect")


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


def shift(
    clients: AwsClients, target: Target, plan: ShiftPlan, console: Console, timing: Timing, log: Path | None = None
) -> None:
    live = read_endpoint(clients.sagemaker, target.endpoint, target.env_name)
    live.variant(target.primary)
    start = live.share(target.canary)
    if live.status != "InService":
        raise OpsError(
            f"endpoint {target.endpoint} is {live.status}: wait until it is InService (`bin/ops status {target.env_name}`)",
            ExitCode.REFUSED,
        )
    if start == plan.weight:
        console.line(f"canary {target.canary} already has {percent(start)} of traffic: nothing to do")
        return
    route = plan_steps(start, plan.weight, plan.steps, plan.first_step)
    guarded = plan.weight > start  # moving traffic away from the canary is the safe direction
    console.line(f"Shifting {target.endpoint}: canary {' → '.join(percent(w) for w in [start, *route])}")
    if guarded:
        console.line(
            f"  guard: alarms on {target.canary} or the endpoint, canary 5XX at most {plan.policy.max_5xx_margin:g} pp "
            f"above the primary's, canary TTFT p95 at most +{plan.policy.max_ttft_increase_percent:g} % or "
            f"+{plan.policy.min_ttft_increase_ms:g} ms above the primary's, at least {plan.policy.min_invocations} "
            f"canary invocations per "
            f"{seconds(plan.policy.window_seconds)} before a step from above 0%, canary capacity for its new share; "
            f"hold {seconds(plan.hold_seconds)} after each step, checked every {seconds(plan.check_seconds)}"
        )
        if plan.override is not None:
            _log_override(target, plan, console, log)
    current = start
    try:
        for weight in route:
            if guarded:
                verdict = _require_healthy(clients.cloudwatch, target, plan, console, evidence=current > 0)
                _require_capacity(clients, target, plan, weight, verdict, console, timing)
            console.line(f"step: canary {percent(current)} → {percent(weight)}")
            set_canary_weight(clients.sagemaker, target, weight, console, timing)
            current = weight
            console.ok(f"canary at {percent(weight)}, primary at {percent(100 - weight)}")
            _hold(clients.cloudwatch, target, plan, guarded, console, timing)
    except (Refused, OpsError, ClientError, BotoCoreError) as stopped:
        problem = stopped if isinstance(stopped, Refused | OpsError) else explain(stopped)
        code = ExitCode.REFUSED if isinstance(problem, Refused) else problem.exit_code
        if current == start:
            raise OpsError(f"shift stopped: {problem}; no weight was changed", code) from None
        outcome = _return_to(clients.sagemaker, target, start, console, timing)
        raise OpsError(f"shift stopped at canary {percent(current)}: {problem}; {outcome}", code) from None
    console.ok(f"shift complete: {target.canary} has {percent(plan.weight)} of traffic")


SKIPPED_BY_OVERRIDE = "the evidence check (minimum canary invocations) and the capacity check"


def _log_override(target: Target, plan: ShiftPlan, console: Console, log: Path | None) -> None:
    """An override is said out loud and written down: who skipped what, when, on which endpoint, why."""
    console.warn(f"override: skipping {SKIPPED_BY_OVERRIDE}; alarms and the 5XX margin still apply")
    console.warn(f"reason given: {plan.override}")
    if log is None:
        return
    entry = {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "user": getpass.getuser(),
        "endpoint": target.endpoint,
        "canary_weight": plan.weight,
        "skipped": SKIPPED_BY_OVERRIDE,
        "reason": plan.override,
    }
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
    """Alarms and the 5XX margin always; before a step from above 0 %, also enough canary invocations."""
    verdict: Verdict = check_canary(
        cloudwatch,
        target.endpoint,
        target.canary,
        target.primary,
        plan.policy,
        require_evidence=evidence and plan.override is None,
    )
    if not verdict.healthy:
        for problem in verdict.problems:
            console.fail(f"{prefix}{problem}")
        raise Refused("; ".join(verdict.problems))
    console.ok(f"{prefix}guard passed ({verdict.summary})")
    return verdict


def _require_capacity(
    clients: AwsClients,
    target: Target,
    plan: ShiftPlan,
    weight: float,
    verdict: Verdict,
    console: Console,
    timing: Timing,
) -> None:
    """The canary's instances in service must serve its new share of the current traffic.

    Current traffic is the guard window's invocations on both variants, per minute; one instance
    serves `planning.capacity[instance type].requests_per_minute` (the planner's figure).
    """
    if plan.override is not None:
        return
    canary = read_endpoint(clients.sagemaker, target.endpoint, target.env_name).variant(target.canary)
    per_instance = plan.capacity_per_instance.get(canary.instance_type)
    if per_instance is None:
        raise Refused(
            f"planning.capacity has no figure for {canary.instance_type}, so the canary's capacity is unknown: "
            f"add one to {environment_label(target.env_name)}"
        )
    window_minutes = plan.policy.window_seconds / 60
    needed_rate = verdict.total_invocations / window_minutes * weight / 100
    in_service = canary.current_instance_count or 0
    needed = max(1, math.ceil(needed_rate / per_instance))
    if in_service >= needed:
        return
    shortfall = (
        f"{percent(weight)} of the current {verdict.total_invocations / window_minutes:,.0f} invocations/min is "
        f"{needed_rate:,.0f}/min, but {in_service} canary instance(s) in service serve {in_service * per_instance:,.0f}/min "
        f"({per_instance:,.0f} each, planning.capacity)"
    )
    if not plan.raise_capacity:
        raise Refused(
            f"{shortfall}: rerun with --raise-canary-capacity (sets {needed} instances and waits for InService), "
            f"or raise the canary's capacity yourself first"
        )
    _raise_canary(clients, target, canary.instance_type, needed, console, timing)


def _raise_canary(
    clients: AwsClients, target: Target, instance_type: str, count: int, console: Console, timing: Timing
) -> None:
    """DesiredInstanceCount through the same call as the weights, within the autoscaler's range."""
    targets = clients.autoscaling.describe_scalable_targets(
        ServiceNamespace=SERVICE_NAMESPACE, ResourceIds=[resource_id(target.endpoint, target.canary)]
    )["ScalableTargets"]
    if targets and targets[0]["MaxCapacity"] < count:
        raise Refused(
            f"the canary needs {count} instances but its autoscaling max_capacity is {targets[0]['MaxCapacity']}: "
            "raise autoscaling.canary.max_capacity and deploy first"
        )
    console.line(f"raising {target.canary} to {count} × {instance_type} before the step")
    clients.sagemaker.update_endpoint_weights_and_capacities(
        EndpointName=target.endpoint,
        DesiredWeightsAndCapacities=[{"VariantName": target.canary, "DesiredInstanceCount": count}],
    )
    wait(
        _instances_in_service(target.canary, count),
        clients.sagemaker.describe_endpoint,
        _describe_instances,
        console,
        timing,
        EndpointName=target.endpoint,
    )
    console.ok(f"{target.canary} has {count} instances in service")


def _instances_in_service(variant: str, count: int) -> Any:
    in_service = f"length(ProductionVariants[?VariantName=='{variant}' && CurrentInstanceCount >= `{count}`]) == `1`"
    return _endpoint_waiter("InstancesInService", in_service)


def _endpoint_waiter(name: str, condition: str) -> Any:
    """DescribeEndpoint until the endpoint is InService with `condition` (JMESPath) true; Failed stops it."""
    return custom_waiter(
        name,
        "DescribeEndpoint",
        [
            {
                "matcher": "path",
                "argument": f"EndpointStatus == 'InService' && {condition}",
                "expected": True,
                "state": "success",
            },
            {"matcher": "path", "argument": "EndpointStatus", "expected": "Failed", "state": "failure"},
        ],
    )


def _describe_instances(response: dict[str, Any]) -> str:
    counts = ", ".join(
        f"{v['VariantName']} {v.get('CurrentInstanceCount', 0)}→{v.get('DesiredInstanceCount', 0)}"
        for v in response.get("ProductionVariants", [])
    )
    return f"{response['EndpointStatus']}; instances {counts}"


def _return_to(sagemaker: Any, target: Target, weight: float, console: Console, timing: Timing) -> str:
    console.line(f"rolling canary back to {percent(weight)}")
    try:
        set_canary_weight(sagemaker, target, weight, console, timing)
    except (ClientError, BotoCoreError) as error:
        failure = explain(error)
        return f"rolling back to {percent(weight)} ALSO failed ({failure}): run `bin/ops rollback {target.env_name}`"
    return f"canary weight rolled back to {percent(weight)}"
