"""The simulator on small scenarios computed by hand (capacity 1,200 requests/min per instance)."""

from datetime import UTC, datetime

import pytest

from config.schema import EngineStepScaling, InstanceCapacity, ScheduledWindow, TargetTracking, VariantScaling
from workbench.planner.autoscaling import StepScalingPolicy, TargetTrackingPolicy
from workbench.planner.calendar import peak_minutes, scheduled_actions
from workbench.planner.fleet import VariantModel
from workbench.planner.simulate import simulate

G5 = InstanceCapacity(requests_per_minute=1200, concurrent_sequences=88)
START = datetime(2026, 10, 29, tzinfo=UTC)


def model(policies, *, min_capacity=1, max_capacity=10, actions=()) -> VariantModel:
    return VariantModel("primary", 1.0, G5, 128, min_capacity, max_capacity, list(policies), list(actions))


def run(m: VariantModel, demand, provisioning_minutes=5, timeout_seconds=60):
    scenario = simulate(
        [m], demand, START, provisioning_minutes=provisioning_minutes, timeout_seconds=timeout_seconds,
        key="t", title="t",
    )  # fmt: skip
    return scenario, scenario.variants["primary"]


def scale_minutes(scenario) -> list[int]:
    return [e.minute for e in scenario.events if e.kind == "scale"]


def queue_steps(cooldown_seconds: int, steps=((50, 1),)) -> StepScalingPolicy:
    return StepScalingPolicy(
        EngineStepScaling(
            metric="QueueDepth",
            scale_out=[{"at_or_above": a, "add_instances": n} for a, n in steps],
            scale_in_below=0,
            cooldown_seconds=cooldown_seconds,
        )
    )


def test_step_up_waits_for_the_alarm_and_the_provisioning_delay():
    # 1,000/min then 3,000/min from minute 10. Target tracking at 1,000 invocations per instance:
    # breaches at minutes 10, 11, 12 -> alarm at 12 asks ceil(3000/1000) = 3; the endpoint starts
    # two instances at 13; they serve from 13 + 5 = 18.
    tracking = TargetTrackingPolicy(TargetTracking(target_value=1000))
    scenario, series = run(model([tracking]), [1000.0] * 10 + [3000.0] * 20)
    assert scale_minutes(scenario) == [12]
    assert series.in_service[17] == 1 and series.in_service[18] == 3
    assert series.billed[12] == 1 and series.billed[13] == 3  # billed from launch
    # One instance serves 1,200 of 3,000; the queue holds one minute of capacity (60 s timeout).
    assert series.backlog[9] == 0 and series.rejected[9] == 0
    assert series.backlog[10] == pytest.approx(1200) and series.rejected[10] == pytest.approx(600)
    assert series.rejected[11] == pytest.approx(1800) and series.wait_seconds[11] == pytest.approx(60)
    # Three instances (3,600/min) clear the 1,200 queued plus 3,000 new over two minutes.
    assert series.backlog[18] == pytest.approx(600) and series.rejected[18] == 0
    assert series.backlog[19] == 0


def test_cooldown_blocks_a_second_scale_out_until_it_ends():
    # Overloaded from minute 1 (3 instances of work on 1) and instances take 30 minutes: the
    # queue alarm stays in ALARM. A 10-minute cooldown allows +1 at minutes 1 and 11 only.
    demand = [1000.0] + [3600.0] * 15
    scenario, _ = run(model([queue_steps(600)]), demand, provisioning_minutes=30)
    assert scale_minutes(scenario) == [1, 11]
    # The same with a one-minute cooldown adds an instance every minute while the alarm holds.
    scenario, _ = run(model([queue_steps(60)]), demand, provisioning_minutes=30)
    assert scale_minutes(scenario) == list(range(1, 10))  # 2, 3, ... up to max_capacity 10


def test_a_larger_step_during_cooldown_adds_only_the_difference():
    # Queue per instance: 1,200 at minute 1 (>= 50: +1), 9,000 from minute 2 (>= 2,000: +3).
    # During the cooldown the +1 already added counts: desired goes 1 -> 2 -> 4, not 5.
    policy = queue_steps(600, steps=((50, 1), (2000, 3)))
    demand = [1000.0, 2400.0] + [9000.0] * 4
    scenario, _ = run(model([policy]), demand, provisioning_minutes=30, timeout_seconds=3600)
    texts = [e.text for e in scenario.events if e.kind == "scale"]
    assert texts == ["desired 1 -> 2 (QueueDepth steps)", "desired 2 -> 4 (QueueDepth steps)"]


def test_scale_in_waits_for_fifteen_quiet_minutes():
    tracking = TargetTrackingPolicy(TargetTracking(target_value=1000))
    scenario, series = run(model([tracking]), [3000.0] * 3 + [500.0] * 30)
    # Starts with ceil(3000/1200) = 3 at 1,000 each (on target). From minute 3, 167 per instance
    # is below 90 % of the target; the 15th quiet minute is 17: desired ceil(500/1000) = 1.
    assert scale_minutes(scenario) == [17]
    assert series.in_service[17] == 3 and series.in_service[18] == 1


def test_one_capacity_change_at_a_time_per_endpoint():
    first = TargetTrackingPolicy(TargetTracking(target_value=1000))
    second = TargetTrackingPolicy(TargetTracking(target_value=1000))
    a = model([first])
    b = VariantModel("canary", 1.0, G5, 128, 1, 10, [second])
    scenario = simulate([a, b], [1000.0] * 2 + [3000.0] * 20, START, provisioning_minutes=5, timeout_seconds=60,
                        key="t", title="t")  # fmt: skip
    # Both ask for 3 at minute 4; primary launches at 5 (ready 10); the canary waits for it, 10 -> 15.
    assert scenario.variants["primary"].in_service[9:11] == [1, 3]
    assert scenario.variants["canary"].in_service[14:16] == [1, 3]


def test_schedule_in_new_york_follows_the_dst_switch():
    # 17:45 New York is 21:45 UTC on Sat 31 Oct (EDT) and 22:45 UTC on Sun 1 Nov (EST).
    window = ScheduledWindow(
        name="us-evening", timezone="America/New_York",
        start="cron(45 17 * * ? *)", end="cron(0 22 * * ? *)", min_capacity=4,
    )  # fmt: skip
    scaling = VariantScaling(min_capacity=1, max_capacity=8, target_tracking={"target_value": 1000}, schedules=[window])
    start = datetime(2026, 10, 31, 12, tzinfo=UTC)
    minutes = 36 * 60
    actions = scheduled_actions(scaling, start, minutes)
    starts = [a.minute for a in actions if a.edge == "start" and a.minute >= 0]
    assert starts == [(21 - 12) * 60 + 45, (24 + 22 - 12) * 60 + 45]
    mask = peak_minutes(actions, minutes)
    assert mask[starts[0] - 1] is False and mask[starts[0]] is True
    assert mask[(24 + 2 - 12) * 60 - 1] is True and mask[(24 + 2 - 12) * 60] is False  # ended 22:00 EDT = 02:00 UTC

    # The floor reaches the fleet: at the Saturday action it asks for 4, serving 5 minutes later.
    _, series = run(model([], actions=actions), [500.0] * minutes)
    assert series.in_service[starts[0] + 4] == 1 and series.in_service[starts[0] + 5] == 4
