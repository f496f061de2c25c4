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

from datetime import datetime

from planner.autoscaling import Load, combine
from planner.fleet import Availability, Fleet, VariantModel, always
from planner.results import Event, Scenario, VariantSeries


def simulate(
    models: list[VariantModel],
    demand: list[float],
    start: datetime,
    *,
    provisioning_minutes: int,
    timeout_seconds: int,
    key: str,
    title: str,
    available: Availability = always,
) -> Scenario:
    fleets = [Fleet(model, timeout_seconds) for model in models]
    series = {m.name: VariantSeries(m.name) for m in models}
    scenario = Scenario(key=key, title=title, start=start, variants=series)
    for fleet in fleets:
        _settle_schedule(fleet)
        fleet.start_at(demand[0] * fleet.model.share, available)

    for minute, total in enumerate(demand):
        for fleet in fleets:
            _apply_schedule(fleet, minute, scenario.events)
        _update_endpoint(fleets, minute, provisioning_minutes, available, scenario.events)
        for fleet in fleets:
            arrivals = total * fleet.model.share
            served, rejected, wait = fleet.serve(arrivals)
            load = fleet.load(arrivals, served)
            _record(series[fleet.model.name], fleet, arrivals, rejected, wait)
            _record_tracking(series[fleet.model.name], fleet, load)
            _run_policies(fleet, minute, load, scenario.events)
    return scenario


def _settle_schedule(fleet: Fleet) -> None:
    """The capacity range the actions fired before the run left (they are in time order)."""
    for action in fleet.model.actions:
        if action.minute < 0:
            fleet.low, fleet.high = action.min_capacity, action.max_capacity


def _apply_schedule(fleet: Fleet, minute: int, events: list[Event]) -> None:
    for action in fleet.model.actions:
        if action.minute != minute:
            continue
        fleet.low, fleet.high = action.min_capacity, action.max_capacity
        text = f"{action.window} {action.edge}: min {fleet.low}, max {fleet.high}"
        events.append(Event(minute, fleet.model.name, "schedule", text))
        _set_desired(fleet, fleet.clamp(fleet.desired), minute, events, f"schedule {action.window}")


def _update_endpoint(
    fleets: list[Fleet], minute: int, provisioning_minutes: int, available: Availability, events: list[Event]
) -> None:
    for fleet in fleets:
        if fleet.launching and fleet.ready_at <= minute:
            fleet.finish_launches()
    if any(f.launching for f in fleets):
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


def _record(out: VariantSeries, fleet: Fleet, arrivals: float, rejected: float, wait: float) -> None:
    out.demand.append(arrivals)
    out.in_service.append(fleet.in_service)
    out.billed.append(fleet.in_service + fleet.provisioning)
    out.billed_usd_per_hour.append(fleet.billed_usd_per_hour())
    out.capacity.append(fleet.capacity)
    out.backlog.append(fleet.backlog)
    out.rejected.append(rejected)
    out.wait_seconds.append(wait)


def _record_tracking(out: VariantSeries, fleet: Fleet, load: Load) -> None:
    """What the capacity-ceiling alarm reads: the load target tracking tracks, per instance, and whether
    target tracking is pinned: the desired count at the window's maximum and every instance of it in
    service (the capacity watch's InstancesBelowMax and InstancesShort both 0; planner.ceiling_replay)."""
    out.concurrency_per_instance.append(load.concurrency / load.in_service if load.in_service else 0.0)
    out.invocations_per_instance.append(load.invocations / load.in_service if load.in_service else 0.0)
    out.at_max.append(fleet.desired >= fleet.high and fleet.in_service >= fleet.desired)


def _run_policies(fleet: Fleet, minute: int, load: Load, events: list[Event]) -> None:
    name = fleet.model.name
    proposals = [p for policy in fleet.model.policies if (p := policy.propose(minute, load, fleet.desired))]
    for policy in fleet.model.policies:
        events.extend(Event(minute, name, "alarm", label) for label, alarm in policy.alarms() if alarm.just_fired)
    chosen = combine(proposals, fleet.desired)
    if chosen:
        _set_desired(fleet, fleet.clamp(chosen.desired), minute, events, chosen.policy)


def _set_desired(fleet: Fleet, desired: int, minute: int, events: list[Event], cause: str) -> None:
    if desired != fleet.desired:
        events.append(Event(minute, fleet.model.name, "scale", f"desired {fleet.desired} -> {desired} ({cause})"))
        fleet.desired = desired
