"""Minute-by-minute replay of traffic through scheduled actions, scaling policies and slow instances.

Order within a minute: scheduled actions fire; launches that finished join; the endpoint applies
the desired counts; the minute's traffic is served; its metrics feed the alarms and policies,
whose decision takes effect from the next minute. SageMaker applies one capacity change at a time:
while instances of one variant are provisioning the endpoint is Updating, and further changes
(of any variant) wait until it is InService again. New instances come from the first pool whose type
can be provisioned (`available`, planner.outages); when none can, nothing launches and the desired
count is tried again the next minute (how long SageMaker holds the endpoint on a failed attempt, up to
VariantInstanceProvisionTimeoutInSeconds, is not modelled: the endpoint is free at once).
"""

from __future__ import annotations

import bisect
import operator
from datetime import datetime

from workbench.planner import quiet
from workbench.planner.autoscaling import Alarm, Load, combine
from workbench.planner.calendar import ScheduledAction
from workbench.planner.fleet import Availability, Fleet, VariantModel, always
from workbench.planner.results import Event, Scenario, VariantSeries

# The longest stretch looked at at once: most end within an hour or two (a scale-out, a queue), and
# working out a longer one costs more than stopping and looking again.
STRETCH_MINUTES = 180
# Within a minute: scheduled actions fire, the endpoint applies the desired counts, the policies act.
SCHEDULE, ENDPOINT, POLICIES = 0, 1, 2
MINUTE_PHASE_VARIANT = operator.itemgetter(0, 1, 2)


def simulate(
    models: list[VariantModel],
    demand: list[float],
    start: datetime,
    *,
    provisioning_minutes: int,
    timeout_seconds: int,
    deadline_seconds: float | None = None,
    key: str,
    title: str,
    available: Availability = always,
    fast: bool = True,
) -> Scenario:
    """`deadline_seconds`: the serving image's admission deadline (planner.fleet: arrivals that would queue
    longer are shed); None: nothing is shed. `fast`: fast-forward through quiet minutes (planner.quiet); False replays every minute one at a
    time, the reference the fast replay is tested against (tests/workbench/planner/test_fast_replay.py)."""
    fleets = [Fleet(model, timeout_seconds, deadline_seconds) for model in models]
    series = {m.name: VariantSeries(m.name) for m in models}
    scenario = Scenario(key=key, title=title, start=start, variants=series)
    for fleet in fleets:
        _settle_schedule(fleet)
        fleet.start_at(demand[0] * fleet.model.share, available)
    lanes = [_Lane(index, fleet, series[fleet.model.name], demand) for index, fleet in enumerate(fleets)]
    index_of = {lane.fleet.model.name: lane.index for lane in lanes}
    fast = fast and all(quiet.tracking_only(fleet) for fleet in fleets)  # planner.quiet: target tracking only
    tagged: list[tuple[int, int, int, Event]] = []  # (minute, phase, variant index, event)
    minute = 0
    while minute < len(demand):
        # The variants whose minutes up to here are recorded: a fast-forwarded one may be ahead (planner.quiet).
        active = [lane for lane in lanes if lane.until <= minute]
        for lane in active:
            if minute in lane.actions:
                _apply_schedule(lane.fleet, minute, lane.actions[minute], found := [])
                tagged += [(minute, SCHEDULE, lane.index, event) for event in found]
        _update_endpoint(fleets, minute, provisioning_minutes, available, found := [], [lane.fleet for lane in active])
        tagged += [(minute, ENDPOINT, index_of[event.variant], event) for event in found]
        for lane in active:
            if fast and not lane.busy and quiet.settled([lane.fleet]):
                # The minute's schedule and endpoint have acted: from here on it may be quiet.
                tagged += _skip_quiet(lane, minute)
            lane.busy = False
            if lane.until > minute:
                continue
            fleet, arrivals = lane.fleet, lane.arrivals[minute]
            served, shed, rejected, wait = fleet.serve(arrivals)
            load = fleet.load(arrivals, served)
            _record(lane.out, fleet, arrivals, shed, rejected, wait)
            _record_tracking(lane.out, fleet, load)
            _run_policies(fleet, minute, load, lane.alarms, found := [])
            tagged += [(minute, POLICIES, lane.index, event) for event in found]
            lane.until = minute + 1
        minute = min(lane.until for lane in lanes)
    # In the order a minute-by-minute replay adds them: by minute; schedules, then the endpoint, then the
    # policies; by variant within each (a stable sort keeps each variant's own order).
    scenario.events = [event for *_, event in sorted(tagged, key=MINUTE_PHASE_VARIANT)]
    return scenario


class _Lane:
    """What a variant's minutes need, looked up rather than searched for: the week's scheduled actions by
    minute, its arrivals, its policies' alarms (fixed objects whose state the policies update), and how far
    its minutes are recorded."""

    def __init__(self, index: int, fleet: Fleet, out: VariantSeries, demand: list[float]) -> None:
        self.index, self.fleet, self.out = index, fleet, out
        self.actions: dict[int, list[ScheduledAction]] = {}
        for action in fleet.model.actions:
            self.actions.setdefault(action.minute, []).append(action)
        self.action_minutes = sorted(m for m in self.actions if m >= 0)
        self.arrivals = [total * fleet.model.share for total in demand]
        self.alarms = [(label, alarm) for policy in fleet.model.policies for label, alarm in policy.alarms()]
        self.until = 0  # its minutes before this are recorded
        self.busy = False  # the minute `until` is known not to be quiet


def _skip_quiet(lane: _Lane, minute: int) -> list[tuple[int, int, int, Event]]:
    """Replay this settled variant's quiet minutes from `minute` at once (planner.quiet), its schedule and the
    endpoint already applied: moves `lane.until` on, and returns the events raised. Variants do not wait for
    each other while quiet: a quiet variant asks the endpoint for nothing, and what the others ask for does
    not change it; it stops where its own scheduled action fires, its own launch finishes or its own
    policy acts."""
    fleet = lane.fleet
    following = bisect.bisect_right(lane.action_minutes, minute)  # its next scheduled action
    end = lane.action_minutes[following] if following < len(lane.action_minutes) else len(lane.arrivals)
    end = min(end, minute + STRETCH_MINUTES, quiet.settled_until([fleet], end))
    if end <= minute:
        return []
    stretch = quiet.quiet_length(fleet, minute, lane.arrivals[minute:end])
    if stretch.length == 0:
        return []
    end = minute + stretch.length
    found = quiet.fast_forward(fleet, lane.out, stretch, lane.arrivals[minute:end], stretch.length)
    tagged = [(m, POLICIES, lane.index, event) for m, event in found]
    if stretch.change:  # its last minute ends in a change of the desired count (planner.quiet)
        (run,) = stretch.runs
        scaled: list[Event] = []
        _set_desired(fleet, fleet.clamp(stretch.change[2]), end - 1, scaled, run.policy.name)
        tagged += [(end - 1, POLICIES, lane.index, event) for event in scaled]
    lane.until, lane.busy = end, stretch.blocked
    return tagged


def _settle_schedule(fleet: Fleet) -> None:
    """The capacity range the actions fired before the run left (they are in time order)."""
    for action in fleet.model.actions:
        if action.minute < 0:
            fleet.low, fleet.high = action.min_capacity, action.max_capacity


def _apply_schedule(fleet: Fleet, minute: int, actions: list[ScheduledAction], events: list[Event]) -> None:
    for action in actions:
        fleet.low, fleet.high = action.min_capacity, action.max_capacity
        text = f"{action.window} {action.edge}: min {fleet.low}, max {fleet.high}"
        events.append(Event(minute, fleet.model.name, "schedule", text))
        _set_desired(fleet, fleet.clamp(fleet.desired), minute, events, f"schedule {action.window}")


def _update_endpoint(
    fleets: list[Fleet],
    minute: int,
    provisioning_minutes: int,
    available: Availability,
    events: list[Event],
    acting: list[Fleet],
) -> None:
    """`acting`: the fleets at this minute; the others are fast-forwarded past it, quiet, so they ask for
    nothing (their launch in flight, if any, still keeps the endpoint Updating)."""
    for fleet in acting:
        if fleet.provisioning and fleet.ready_at <= minute:
            fleet.finish_launches()
    if any(f.provisioning for f in fleets):
        return  # endpoint Updating: capacity changes wait
    for fleet in acting:
        if fleet.desired < fleet.in_service:
            fleet.release(fleet.in_service - fleet.desired)  # instances drain and stop within the minute
        elif fleet.desired > fleet.in_service:
            count = fleet.desired - fleet.in_service
            launched = fleet.launch(count, minute, minute + provisioning_minutes, available)
            if launched is None:
                if not fleet.waiting:
                    events.append(Event(minute, fleet.model.name, "pool", f"no pool can provision {count}: waiting"))
                fleet.waiting = True
                continue  # the endpoint stays InService; tried again next minute
            fleet.waiting = False
            if launched != fleet.model.instance_type:
                events.append(Event(minute, fleet.model.name, "pool", f"{count} x {launched} (fallback pool)"))
            if provisioning_minutes == 0:
                fleet.finish_launches()
                continue
            return


def _record(out: VariantSeries, fleet: Fleet, arrivals: float, shed: float, rejected: float, wait: float) -> None:
    out.demand.append(arrivals)
    out.in_service.append(fleet.in_service)
    out.billed.append(fleet.in_service + fleet.provisioning)
    out.billed_usd_per_hour.append(fleet.billed_usd_per_hour())
    out.capacity.append(fleet.capacity)
    out.backlog.append(fleet.backlog)
    out.shed.append(shed)
    out.rejected.append(rejected)
    out.wait_seconds.append(wait)


def _record_tracking(out: VariantSeries, fleet: Fleet, load: Load) -> None:
    """What the capacity-ceiling alarm reads: the load target tracking tracks, per instance, and whether
    target tracking is pinned: the desired count at the window's maximum and every instance of it in
    service (the capacity watch's InstancesBelowMax and InstancesShort both 0; planner.ceiling_replay)."""
    out.concurrency_per_instance.append(load.concurrency / load.in_service if load.in_service else 0.0)
    out.invocations_per_instance.append(load.invocations / load.in_service if load.in_service else 0.0)
    out.at_max.append(fleet.desired >= fleet.high and fleet.in_service >= fleet.desired)


def _run_policies(fleet: Fleet, minute: int, load: Load, alarms: list[tuple[str, Alarm]], events: list[Event]) -> None:
    name = fleet.model.name
    proposals = [p for policy in fleet.model.policies if (p := policy.propose(minute, load, fleet.desired))]
    events.extend(Event(minute, name, "alarm", label) for label, alarm in alarms if alarm.just_fired)
    chosen = combine(proposals, fleet.desired)
    if chosen:
        _set_desired(fleet, fleet.clamp(chosen.desired), minute, events, chosen.policy)


def _set_desired(fleet: Fleet, desired: int, minute: int, events: list[Event], cause: str) -> None:
    if desired != fleet.desired:
        events.append(Event(minute, fleet.model.name, "scale", f"desired {fleet.desired} -> {desired} ({cause})"))
        fleet.desired = desired
