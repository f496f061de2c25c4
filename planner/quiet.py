"""Fast-forward a replay through quiet minutes, computed for many minutes at once with numpy.

A minute is quiet when nothing but the alarms' counters can change in it: no launch finishing, every
variant at its desired count (counting the instances provisioning) with no queue, no scheduled action, demand within capacity, and
no target-tracking policy that would propose a change (its alarm in ALARM with the capacity it asks
for on the other side of the desired count, past its cooldowns). Over such a stretch the served
requests, the metrics and the alarms' breach counters follow from the arrivals alone, with the same
arithmetic as Fleet.serve/Fleet.load and TargetTrackingPolicy.propose, elementwise; the stretch ends
at the first minute that is not quiet, which planner.simulate replays one at a time. Variants with step
scaling are never fast-forwarded (no environment uses it): the one-at-a-time replay covers them.
"""

from __future__ import annotations

import numpy as np

from config.metric_names import HIGH_RESOLUTION
from planner.autoscaling import TRACKING_SCALE_IN_FRACTION, TargetTrackingPolicy
from planner.fleet import Fleet
from planner.results import Event, VariantSeries


def settled(fleets: list[Fleet]) -> bool:
    """Nothing for the endpoint to do until a launch finishes: every variant at its desired count (with the
    instances provisioning), no queue."""
    return all(
        f.desired == f.in_service + f.provisioning and f.backlog == 0 and f.capacity > 0 and _tracking_only(f)
        for f in fleets
    )


def settled_until(fleets: list[Fleet], end: int) -> int:
    """The stretch ends where a launch finishes (the endpoint then applies the desired counts again)."""
    return min([end] + [f.ready_at for f in fleets if f.provisioning])


def _tracking_only(fleet: Fleet) -> bool:
    return all(isinstance(policy, TargetTrackingPolicy) for policy in fleet.model.policies)


# A proposal that the capacity range clamps back to the desired count changes nothing but the policy's
# cooldown clock: (minute, policy, "out" or "in", capacity asked for).
NoOp = tuple[int, TargetTrackingPolicy, str, int]


# Per policy, its two alarms' breach counters minute by minute (Alarm.update over the stretch).
Counters = list[tuple[np.ndarray, np.ndarray]]


def quiet_length(fleet: Fleet, start: int, arrivals: np.ndarray) -> tuple[int, list[NoOp], Counters]:
    """How many minutes from `start` this settled variant stays quiet (arrivals: of the candidate stretch),
    the no-op proposals its policies make meanwhile and their alarms' counters."""
    length = _first(arrivals > fleet.capacity, len(arrivals))
    noops: list[NoOp] = []
    counters: Counters = []
    for policy in fleet.model.policies:
        out_count, in_count, wanted = _alarm_runs(policy, fleet, arrivals[:length])
        counters.append((out_count, in_count))
        out, quiet = out_count >= policy.scale_out.periods, in_count >= policy.scale_in.periods
        rises, falls = out & (wanted > fleet.desired), quiet & (wanted < fleet.desired)
        last_out, last_out_to, last_in = policy.last_out, policy.last_out_to, policy.last_in
        for i in np.flatnonzero(rises | falls):  # TargetTrackingPolicy.propose at the minutes it may act
            minute, asked = start + int(i), int(wanted[i])
            if rises[i] and minute - last_out < policy.out_cooldown and asked <= last_out_to:
                continue
            if falls[i] and (minute - last_in < policy.in_cooldown or minute - last_out < policy.out_cooldown):
                continue
            if fleet.clamp(asked) != fleet.desired:
                length = int(i)
                break
            if rises[i]:
                last_out, last_out_to = minute, asked
            else:
                last_in = minute
            noops.append((minute, policy, "out" if rises[i] else "in", asked))
    return length, noops, counters


def fast_forward(
    fleet: Fleet, out: VariantSeries, start: int, arrivals: np.ndarray, noops: list[NoOp], counters: Counters
) -> list[tuple[int, Event]]:
    """Record the quiet minutes of `arrivals`, move the alarms' counters and cooldown clocks on; the alarm
    events they raise."""
    n, length = fleet.in_service, len(arrivals)
    out.demand.extend(arrivals.tolist())
    out.in_service.extend([n] * length)
    out.billed.extend([n + fleet.provisioning] * length)
    out.billed_usd_per_hour.extend([fleet.billed_usd_per_hour()] * length)
    out.capacity.extend([fleet.capacity] * length)
    out.backlog.extend([0.0] * length)
    out.shed.extend([0.0] * length)
    out.rejected.extend([0.0] * length)
    out.wait_seconds.extend([0.0] * length)
    # What the capacity-ceiling alarm reads (simulate._record_tracking), computed as Fleet.load would.
    in_flight = _in_flight(fleet, arrivals) if fleet.capacity > 0 else np.zeros(length)
    out.concurrency_per_instance.extend((in_flight / n).tolist() if n else [0.0] * length)
    out.invocations_per_instance.extend((arrivals / n).tolist() if n else [0.0] * length)
    out.at_max.extend([fleet.desired >= fleet.high and fleet.in_service >= fleet.desired] * length)
    events = []
    for policy, runs in zip(fleet.model.policies, counters, strict=True):
        for (label, alarm), breaches in zip(policy.alarms(), runs, strict=True):
            breaches = breaches[:length]
            events += [(start + int(i), Event(start + int(i), fleet.model.name, "alarm", label))
                       for i in np.flatnonzero(breaches == alarm.periods)]  # fmt: skip
            alarm.breaches = int(breaches[-1])
    for minute, policy, kind, asked in noops:
        if minute < start + length and kind == "out":
            policy.last_out, policy.last_out_to = minute, asked
        elif minute < start + length:
            policy.last_in = minute
    return events


def _alarm_runs(policy: TargetTrackingPolicy, fleet: Fleet, arrivals: np.ndarray):
    """Per minute: the scale-out and scale-in alarms' breach counters and the capacity asked for."""
    # TargetTrackingPolicy._total_load; concurrency is what is in flight plus the (empty) queue.
    total = _in_flight(fleet, arrivals) + 0.0 if policy.metric == HIGH_RESOLUTION else arrivals
    per_instance = total / fleet.in_service
    out = _counters(per_instance > policy.target, policy.scale_out.breaches)
    quiet = _counters(per_instance < TRACKING_SCALE_IN_FRACTION * policy.target, policy.scale_in.breaches)
    return out, quiet, np.ceil(total / policy.target)


def _in_flight(fleet: Fleet, served: np.ndarray) -> np.ndarray:
    """Fleet.load's Little's law, elementwise and in the same order of operations."""
    in_flight = 0
    for t, count in fleet.serving.items():
        in_flight = in_flight + served * count * fleet._rates[t] / fleet.capacity / 60 * fleet._seconds[t]
    return in_flight


def _counters(breaching: np.ndarray, before: int) -> np.ndarray:
    """Alarm.update over a run: consecutive breaching minutes up to each minute, from `before`."""
    minute = np.arange(len(breaching))
    last_ok = np.maximum.accumulate(np.where(breaching, -1, minute))
    return np.where(last_ok < 0, before + minute + 1, minute - last_ok)


def _first(flags: np.ndarray, otherwise: int) -> int:
    """Index of the first True in flags, or `otherwise`."""
    hits = np.flatnonzero(flags[:otherwise])
    return int(hits[0]) if len(hits) else otherwise
