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

from planner import quiet
from planner.autoscaling import Alarm, Load, combine
from planner.calendar import ScheduledAction
from planner.fleet import Availability, Fleet, VariantModel, always
from planner.results import Event, Scenario, VariantSeries

# The longest stretch looked at at once: most end within an hour or two (a scale-out, a queue), and
# working out a longer one costs more than stopping and looking again (benchmarks/plan_replay.py).
STRETCH_MINUTES = 180
MINUTE_THEN_VARIANT = operator.itemgetter(0, 1)


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
    time, the reference the fast replay is tested against (tests/planner/test_fast_replay.py)."""
    fleets = [Fleet(model, timeout_seconds, deadline_seconds) for model in models]
    series = {m.name: VariantSeries(m.name) for m in models}
    scenario = Scenario(key=key, title=title, start=start, variants=series)
    for fleet in fleets:
        _settle_schedule(fleet)
        fleet.start_at(demand[0] * fleet.model.share, available)
    lanes = [_Lane(fleet, series[fleet.model.name], demand) for fleet in fleets]
    action_minutes = sorted({m for lane in lanes for m in lane.actions if m >= 0})
    fast = fast and all(quiet.tracking_only(fleet) for fleet in fleets)  # planner.quiet: target tracking only
    minute, busy = 0, False  # busy: the minute is known not to be quiet
    while minute < len(demand):
        for lane in lanes:
            if minute in lane.actions:
                _apply_schedule(lane.fleet, minute, lane.actions[minute], scenario.events)
        _update_endpoint(fleets, minute, provisioning_minutes, available, scenario.events)
        if fast and not busy:
            # The minute's schedule and endpoint have acted: from here on it may be quiet.
            end, busy = _skip_quiet(lanes, minute, action_minutes, scenario.events)
            if end > minute:
                minute = end
                continue
        busy = False
        for lane in lanes:
            fleet, arrivals = lane.fleet, lane.arrivals[minute]
            served, shed, rejected, wait = fleet.serve(arrivals)
            load = fleet.load(arrivals, served)
            _record(lane.out, fleet, arrivals, shed, rejected, wait)
            _record_tracking(lane.out, fleet, load)
            _run_policies(fleet, minute, load, lane.alarms, scenario.events)
        minute += 1
    return scenario


class _Lane:
    """What a variant's minutes need, looked up rather than searched for: the week's scheduled actions by
    minute, its arrivals, its policies' alarms (fixed objects whose state the policies update)."""

    def __init__(self, fleet: Fleet, out: VariantSeries, demand: list[float]) -> None:
        self.fleet, self.out = fleet, out
        self.actions: dict[int, list[ScheduledAction]] = {}
        for action in fleet.model.actions:
            self.actions.setdefault(action.minute, []).append(action)
        self.arrivals = [total * fleet.model.share for total in demand]
        self.alarms = [(label, alarm) for policy in fleet.model.policies for label, alarm in policy.alarms()]
        self.stopped = False  # its own minutes ended the last quiet stretch looked at (planner.quiet)


def _skip_quiet(lanes: list[_Lane], minute: int, action_minutes: list[int], events: list[Event]) -> tuple[int, bool]:
    """Replay the quiet minutes from `minute` at once (planner.quiet), its schedule and endpoint already
    applied: the first minute left to replay, and whether that minute is known not to be quiet (a variant's
    own minute ended the stretch, not a scheduled action, a launch finishing or the stretch's limit)."""
    fleets = [lane.fleet for lane in lanes]
    if not quiet.settled(fleets):
        return minute, False
    following = bisect.bisect_right(action_minutes, minute)  # the next minute a scheduled action fires
    end = action_minutes[following] if following < len(action_minutes) else len(lanes[0].arrivals)
    end = min(end, minute + STRETCH_MINUTES, quiet.settled_until(fleets, end))
    if end <= minute:
        return minute, False
    stretches = {}
    # The variants that ended the last stretch first: they likely end this one too, and the others are then
    # looked at only that far.
    for index, lane in sorted(enumerate(lanes), key=lambda item: not item[1].stopped):
        stretch = quiet.quiet_length(lane.fleet, minute, lane.arrivals[minute:end])
        lane.stopped = minute + stretch.length < end or stretch.change is not None
        end = min(end, minute + stretch.length)
        stretches[index] = stretch
    if end == minute:
        return minute, False
    raised = []
    for index, lane in enumerate(lanes):
        stretch = stretches[index]
        found = quiet.fast_forward(lane.fleet, lane.out, stretch, lane.arrivals[minute:end], end - minute)
        if stretch.change and stretch.change[0] == end - 1:  # its last minute ends in a change (planner.quiet)
            (run,) = stretch.runs
            scaled: list[Event] = []
            _set_desired(lane.fleet, lane.fleet.clamp(stretch.change[2]), end - 1, scaled, run.policy.name)
            found += [(end - 1, event) for event in scaled]
        raised += [(m, index, e) for m, e in found]
    # In the order a minute-by-minute replay adds them: by minute, then variant (a stable sort).
    events.extend(e for _, _, e in sorted(raised, key=MINUTE_THEN_VARIANT))
    busy = any(s.blocked and minute + s.length == end for s in stretches.values())
    return end, busy


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
    fleets: list[Fleet], minute: int, provisioning_minutes: int, available: Availability, events: list[Event]
) -> None:
    for fleet in fleets:
        if fleet.provisioning and fleet.ready_at <= minute:
            fleet.finish_launches()
    if any(f.provisioning for f in fleets):
        return  # endpoint Updating: capacity changes wait
    for fleet in fleets:
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
