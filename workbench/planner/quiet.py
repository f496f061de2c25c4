"""Fast-forward a replay through quiet minutes: one tight loop per variant and policy, no per-minute objects.

A variant's minute is quiet when nothing but its alarms' counters can change in it: no launch of its
finishing, the variant at its desired count (counting the instances provisioning) with no queue, no
scheduled action of its, demand within capacity, and no target-tracking policy that would propose a
change (its alarm in ALARM with the capacity it asks for on the other side of the desired count, past
its cooldowns). Each variant is fast-forwarded on its own: a quiet one asks the endpoint for nothing,
and what the others ask for does not change it. Over such a stretch the served requests, the metrics
and the alarms' breach counters follow from the arrivals alone, with the same arithmetic as
Fleet.serve/Fleet.load and TargetTrackingPolicy.propose, in the same order of operations (so the same
floats); the stretch ends at the first minute that is not quiet, which planner.simulate replays one at
a time, or takes in the minute a policy changes the desired count (served quietly, the change applied
after it). Variants with step scaling are never fast-forwarded (no environment uses it): the
one-at-a-time replay covers them.

Why scalar Python and not numpy: most stretches last a few minutes (a scale-out every few minutes on a
busy evening), and numpy's cost per call on a handful of numbers is what a replay spent its time on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from config.metric_names import HIGH_RESOLUTION
from workbench.planner.autoscaling import TRACKING_SCALE_IN_FRACTION, TargetTrackingPolicy
from workbench.planner.fleet import Fleet
from workbench.planner.results import Event, VariantSeries


def settled(fleets: list[Fleet]) -> bool:
    """Nothing for the endpoint to do until a launch finishes: every variant at its desired count (with the
    instances provisioning), no queue. (Only fleets whose policies are all tracking_only come here.)"""
    return all(f.desired == f.in_service + f.provisioning and f.backlog == 0 and f.capacity > 0 for f in fleets)


def settled_until(fleets: list[Fleet], end: int) -> int:
    """The stretch ends where a launch finishes (the endpoint then applies the desired counts again)."""
    return min([end] + [f.ready_at for f in fleets if f.provisioning])


def tracking_only(fleet: Fleet) -> bool:
    return all(isinstance(policy, TargetTrackingPolicy) for policy in fleet.model.policies)


@dataclass(slots=True)
class PolicyRun:
    """One policy over a stretch of `length` minutes: its alarms' breach counters after them, the minutes each
    alarm fired, and the proposals the capacity range clamps back to the desired count (they move only the
    cooldown clocks): (minute, "out" or "in", capacity asked for)."""

    policy: TargetTrackingPolicy
    length: int = 0
    out_count: int = 0
    in_count: int = 0
    out_fired: list[int] = field(default_factory=list)
    in_fired: list[int] = field(default_factory=list)
    noops: list[tuple[int, str, int]] = field(default_factory=list)
    # The proposal that changes the desired count, at the run's last minute: (minute, "out" or "in", asked).
    change: tuple[int, str, int] | None = None


@dataclass(slots=True)
class Stretch:
    """What one settled variant does from `start`: `length` minutes it can be fast-forwarded through and each
    policy's run. With `change` (one policy only) the last of them is served quietly but ends in that
    policy's change of the desired count, which planner.simulate applies; `blocked`: the minute after them
    is not quiet for this variant."""

    start: int
    length: int
    runs: list[PolicyRun]
    change: tuple[int, str, int] | None = None
    blocked: bool = False


def quiet_length(fleet: Fleet, start: int, arrivals: list[float]) -> Stretch:
    """How many minutes from `start` this settled variant stays quiet (arrivals: of the candidate stretch),
    with what the policies do meanwhile. Reads the fleet and its policies; changes neither."""
    capacity, candidate, runs = fleet.capacity, len(arrivals), []
    length = candidate
    for policy in fleet.model.policies:
        run = _policy_run(policy, fleet, start, arrivals if length == candidate else arrivals[:length])
        length = run.length - (run.change is not None)  # the minute of a change is not quiet
        runs.append(run)
    if not runs:  # nothing proposes: quiet until demand passes capacity
        length = next((i for i, a in enumerate(arrivals) if a > capacity), length)
    # One policy whose change ends the run: its minute is served quietly, and the change follows.
    (change,) = [run.change for run in runs] if len(runs) == 1 else [None]
    if change is not None:
        length += 1
    # With several policies, one that ran further than another let the stretch go: again, as far as it goes.
    runs = [run if run.length == length else _policy_run(run.policy, fleet, start, arrivals[:length]) for run in runs]
    return Stretch(start, length, runs, change, not change and length < candidate)


def _policy_run(policy: TargetTrackingPolicy, fleet: Fleet, start: int, arrivals: list[float]) -> PolicyRun:
    """TargetTrackingPolicy.propose minute by minute until demand passes capacity (that minute is left out)
    or a proposal would change the desired count (that minute is the run's last, with `change`)."""
    run = PolicyRun(policy)
    capacity, target, n, desired = fleet.capacity, policy.target, fleet.in_service, fleet.desired
    low, high = fleet.low, fleet.high  # Fleet.clamp's range
    tracks_concurrency = policy.metric == HIGH_RESOLUTION
    terms = _terms(fleet)
    (c1, r1, s1), (c2, r2, s2) = (terms + [(0, 0.0, 0.0)] * 2)[:2]
    one, two = len(terms) == 1, len(terms) == 2
    scale_in_below = TRACKING_SCALE_IN_FRACTION * policy.target
    out_periods, in_periods = policy.scale_out.periods, policy.scale_in.periods
    out_cooldown, in_cooldown = policy.out_cooldown, policy.in_cooldown
    out_count, in_count = policy.scale_out.breaches, policy.scale_in.breaches
    last_out, last_out_to, last_in = policy.last_out, policy.last_out_to, policy.last_in
    minute = start - 1
    for a in arrivals:
        minute += 1
        if a > capacity:
            break
        if not tracks_concurrency:
            load = a
        elif one:  # Fleet.load's sum over the instance types in service, term by term
            load = a * c1 * r1 / capacity / 60 * s1
        elif two:
            load = a * c1 * r1 / capacity / 60 * s1 + a * c2 * r2 / capacity / 60 * s2
        else:
            load = sum(a * count * rate / capacity / 60 * seconds for count, rate, seconds in terms)
        per_instance = load / n
        out_count = out_count + 1 if per_instance > target else 0
        in_count = in_count + 1 if per_instance < scale_in_below else 0
        if out_count == out_periods:
            run.out_fired.append(minute)
        if in_count == in_periods:
            run.in_fired.append(minute)
        # TargetTrackingPolicy.propose: a minute breaching one alarm breaches not the other, so at most one
        # branch can act; the capacity asked for is worked out only where it can matter.
        if out_count >= out_periods:
            wanted = math.ceil(load / target)
            if wanted > desired:
                if minute - last_out < out_cooldown and wanted <= last_out_to:
                    continue
                if min(max(wanted, low), high) != desired:
                    run.change = (minute, "out", wanted)
                    break
                last_out, last_out_to = minute, wanted
                run.noops.append((minute, "out", wanted))
        elif in_count >= in_periods and minute - last_in >= in_cooldown and minute - last_out >= out_cooldown:
            wanted = math.ceil(load / target)
            if wanted < desired:
                if min(max(wanted, low), high) != desired:
                    run.change = (minute, "in", wanted)
                    break
                last_in = minute
                run.noops.append((minute, "in", wanted))
    else:
        minute += 1  # every minute counted
    # A minute ended by demand over capacity is not counted (its counters were not moved); a change's is.
    run.length = minute - start + (run.change is not None)
    run.out_count, run.in_count = out_count, in_count
    return run


def fast_forward(fleet: Fleet, out: VariantSeries, stretch: Stretch, arrivals: list[float], length: int):
    """Record the first `length` minutes of `stretch` (arrivals: from its start), move the alarms' counters
    and cooldown clocks on; the alarm events raised, as (minute, Event)."""
    n, start = fleet.in_service, stretch.start
    arrivals = arrivals if len(arrivals) == length else arrivals[:length]
    out.demand.extend(arrivals)
    out.in_service.extend([n] * length)
    out.billed.extend([n + fleet.provisioning] * length)
    out.billed_usd_per_hour.extend([fleet.billed_usd_per_hour()] * length)
    out.capacity.extend([fleet.capacity] * length)
    zeros = [0.0] * length
    out.backlog.extend(zeros)
    out.shed.extend(zeros)
    out.rejected.extend(zeros)
    out.wait_seconds.extend(zeros)
    # What the capacity-ceiling alarm reads (simulate._record_tracking), as Fleet.load computes it.
    out.concurrency_per_instance.extend([c / n for c in in_flight(fleet, arrivals)] if n else zeros)
    out.invocations_per_instance.extend([a / n for a in arrivals] if n else zeros)
    out.at_max.extend([fleet.desired >= fleet.high and fleet.in_service >= fleet.desired] * length)
    end = start + length
    events = []
    for run in stretch.runs:
        policy = run.policy
        (out_label, in_label), scale_out, scale_in = policy.alarm_labels, policy.scale_out, policy.scale_in
        events += [(m, Event(m, fleet.model.name, "alarm", out_label)) for m in run.out_fired if m < end]
        events += [(m, Event(m, fleet.model.name, "alarm", in_label)) for m in run.in_fired if m < end]
        scale_out.breaches, scale_in.breaches = run.out_count, run.in_count
        for minute, kind, asked in run.noops + ([run.change] if run.change else []):
            if minute < end and kind == "out":
                policy.last_out, policy.last_out_to = minute, asked
            elif minute < end:
                policy.last_in = minute
    return events


def in_flight(fleet: Fleet, served: list[float]) -> list[float]:
    """Fleet.load's Little's law plus the (empty) queue, minute by minute, in the same order of operations."""
    capacity, terms = fleet.capacity, _terms(fleet)
    if len(terms) == 1:
        ((count, rate, seconds),) = terms
        return [s * count * rate / capacity / 60 * seconds + 0.0 for s in served]
    if len(terms) == 2:
        (c1, r1, s1), (c2, r2, s2) = terms
        return [s * c1 * r1 / capacity / 60 * s1 + s * c2 * r2 / capacity / 60 * s2 + 0.0 for s in served]
    return [sum(s * count * rate / capacity / 60 * seconds for count, rate, seconds in terms) + 0.0 for s in served]


def _terms(fleet: Fleet) -> list[tuple[int, float, float]]:
    """Per instance type in service (in the fleet's order): count, requests per minute, seconds per request.
    A type with none in service is left out: its term in Fleet.load's sum is +0.0, which changes no float."""
    return [(count, fleet._rates[t], fleet._seconds[t]) for t, count in fleet.serving.items() if count]
