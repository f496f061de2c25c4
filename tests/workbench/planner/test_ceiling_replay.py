"""The capacity-ceiling ticket replayed on prod's reference week (issue 39 item 5): the former alarm
(load above 130 % of the scaling target for 15 min) held every evening and release window, where the
floors carry the forecast at full capacity and target tracking at the window's max still wants more;
the alarm as built now fires only where the fleet is pinned at its maximum and the load is above what
it serves, which the reference week reaches at most in its unannounced spike."""

from __future__ import annotations

import pytest

from config import load_catalog, load_environment
from workbench.planner.build import build_plan
from workbench.planner.ceiling_replay import current_firings, former_firings
from workbench.planner.environment_traffic import traffic_of


@pytest.fixture(scope="module")
def week():
    cfg = load_environment("prod", against_deployed=False)
    traffic = traffic_of(cfg)
    return cfg, traffic, build_plan(cfg, load_catalog(), traffic).scenarios["configured"]


def spike_minutes(traffic) -> set[int]:
    return {m for e in traffic.events if e.kind == "spike" for m in range(e.start_minute, e.end_minute)}


def test_the_ceiling_ticket_is_quiet_outside_the_spike(week) -> None:
    cfg, traffic, configured = week
    for variant, series in configured.variants.items():
        assert set(current_firings(cfg, variant, series)) <= spike_minutes(traffic), variant


def test_the_former_alarm_fired_on_the_windows_the_new_one_ignores(week) -> None:
    """So the replay can tell the two apart: the former one fired outside the spike on this week."""
    cfg, traffic, configured = week
    former = [m for v, s in configured.variants.items() for m in former_firings(cfg, v, s)]
    assert set(former) - spike_minutes(traffic)


def test_a_fleet_pinned_above_capacity_does_fire(week) -> None:
    """The condition is reachable: the primary's series forced to its maximum and over capacity fires."""
    cfg, _, configured = week
    series = configured.variants["primary"]
    pinned = type(series)(
        "primary",
        concurrency_per_instance=[1000.0] * 30,
        invocations_per_instance=[100_000.0] * 30,
        at_max=[True] * 30,
    )
    assert current_firings(cfg, "primary", pinned) == [cfg.alarms.capacity_ceiling_minutes - 1]
