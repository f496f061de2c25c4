"""Moving traffic between the primary and the canary with UpdateEndpointWeightsAndCapacities.

Weights are written as percentages (canary N, primary 100 - N) and every change is confirmed by
describing the endpoint until SageMaker reports them in effect.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import AwsClients
from ops.endpoint import read_endpoint
from ops.errors import ExitCode, OpsError, explain
from ops.guard import GuardPolicy, Verdict, check_canary
from ops.output import Console, percent, seconds
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


def plan_steps(start: float, target: float, steps: Iterable[float]) -> list[float]:
    """The weights to pass through, in travel order, ending at the target (steps outside are ignored)."""
    low, high = sorted((start, target))
    between = sorted({s for s in steps if low < s < high}, reverse=target < start)
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
    return custom_waiter(
        "WeightsInEffect",
        "DescribeEndpoint",
        [
            {
                "matcher": "path",
                "argument": f"EndpointStatus == 'InService' && {in_effect}",
                "expected": True,
                "state": "success",
            },
            {"matcher": "path", "argument": "EndpointStatus", "expected": "Failed", "state": "failure"},
        ],
    )


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


def shift(clients: AwsClients, target: Target, plan: ShiftPlan, console: Console, timing: Timing) -> None:
    live = read_endpoint(clients.sagemaker, target.endpoint, target.env_name)
    live.variant(target.primary)
    start = live.share(target.canary)
    if live.status != "InService":
        raise OpsError(
            f"endpoint {target.endpoint} is {live.status}: wait until it is InService (`python -m ops status {target.env_name}`)",
            ExitCode.REFUSED,
        )
    if start == plan.weight:
        console.line(f"canary {target.canary} already has {percent(start)} of traffic: nothing to do")
        return
    route = plan_steps(start, plan.weight, plan.steps)
    guarded = plan.weight > start  # moving traffic away from the canary is the safe direction
    console.line(f"Shifting {target.endpoint}: canary {' → '.join(percent(w) for w in [start, *route])}")
    if guarded:
        console.line(
            f"  guard: alarms on {target.canary} or the endpoint, canary 5XX at most {plan.policy.max_5xx_margin:g} pp "
            "above the primary's; "
            f"hold {seconds(plan.hold_seconds)} after each step, checked every {seconds(plan.check_seconds)}"
        )
    current = start
    try:
        for weight in route:
            if guarded:
                _require_healthy(clients.cloudwatch, target, plan.policy, console)
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


def _hold(cloudwatch: Any, target: Target, plan: ShiftPlan, guarded: bool, console: Console, timing: Timing) -> None:
    remaining = plan.hold_seconds
    while remaining > 0:
        pause = min(plan.check_seconds, remaining)
        timing.sleep(pause)
        remaining -= pause
        if guarded:
            _require_healthy(cloudwatch, target, plan.policy, console, f"hold, {seconds(remaining)} left: ")


def _require_healthy(cloudwatch: Any, target: Target, policy: GuardPolicy, console: Console, prefix: str = "") -> None:
    verdict: Verdict = check_canary(cloudwatch, target.endpoint, target.canary, target.primary, policy)
    if not verdict.healthy:
        for problem in verdict.problems:
            console.fail(f"{prefix}{problem}")
        raise Refused("; ".join(verdict.problems))
    console.ok(f"{prefix}guard passed ({verdict.summary})")


def _return_to(sagemaker: Any, target: Target, weight: float, console: Console, timing: Timing) -> str:
    console.line(f"rolling canary back to {percent(weight)}")
    try:
        set_canary_weight(sagemaker, target, weight, console, timing)
    except (ClientError, BotoCoreError) as error:
        failure = explain(error)
        return (
            f"rolling back to {percent(weight)} ALSO failed ({failure}): run `python -m ops rollback {target.env_name}`"
        )
    return f"canary weight rolled back to {percent(weight)}"
