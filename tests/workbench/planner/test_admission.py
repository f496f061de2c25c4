"""The admission deadline in the replay (planner.fleet): an arrival whose queue wait would pass it is shed at
once, leaves the queue to the rest, and counts as a failed request, shown apart as shed."""

from datetime import UTC, datetime

import pytest

from config.loader import load_catalog, load_environment
from config.schema import InstanceCapacity
from workbench.planner.build import build_plan, limits
from workbench.planner.fleet import VariantModel
from workbench.planner.reference_week import reference_week
from workbench.planner.results import Plan
from workbench.planner.simulate import simulate
from workbench.planner.summary import render_summary
from workbench.planner.totals import add_totals

RATE = 1200.0  # requests/min one instance serves
START = datetime(2026, 10, 29, tzinfo=UTC)
DEADLINE = 2.0  # seconds: 40 requests queued ahead at 1,200/min


def one_instance(demand: list[float], deadline: float | None):
    """A fixed fleet of one instance (no policy can hide the queue), 60 s request timeout."""
    model = VariantModel("primary", 1.0, InstanceCapacity(requests_per_minute=RATE, concurrent_sequences=20), 128, 1, 1)
    scenario = simulate(
        [model], demand, START, provisioning_minutes=5, timeout_seconds=60, deadline_seconds=deadline,
        key="configured", title="t",
    )  # fmt: skip
    return add_totals(scenario, {"primary": 1.0}, allowed_wait=3600.0)  # no admitted wait counts as failed here


def test_a_backlog_past_the_deadline_is_shed_and_the_admitted_wait_less():
    # 2.5 x capacity for 4 minutes, then half of it.
    demand = [1000.0] + [3000.0] * 4 + [600.0] * 3
    shedding, waiting = one_instance(demand, DEADLINE), one_instance(demand, None)
    shed, queued = shedding.variants["primary"], waiting.variants["primary"]
    # Minute 1: 1,800 over capacity; 40 may queue (2 s at 1,200/min), the other 1,760 are answered at once.
    assert shed.shed[1] == pytest.approx(3000 - RATE - RATE * DEADLINE / 60)
    assert shed.backlog[1] == pytest.approx(RATE * DEADLINE / 60)
    assert max(shed.wait_seconds) == pytest.approx(DEADLINE)
    # Without the deadline the queue grows to the 60 s timeout and the rest time out instead.
    assert sum(queued.shed) == 0 and max(queued.wait_seconds) == pytest.approx(60)
    assert sum(shed.rejected) == 0 and sum(queued.rejected) > 0
    # Shed requests leave the queue: once demand falls, the admitted ones behind them wait less (none at 600/min).
    assert shed.wait_seconds[5] == 0 < queued.wait_seconds[5]
    assert all(a <= b + 1e-9 for a, b in zip(shed.wait_seconds, queued.wait_seconds, strict=True))
    # Every shed request is a failed one, counted apart.
    total = shedding.total
    assert total.shed_requests > 0 and total.shed_requests == pytest.approx(sum(shed.shed))
    assert total.failed_requests == pytest.approx(total.shed_requests)
    assert total.wait_max_seconds < waiting.total.wait_max_seconds


def test_an_admitted_request_is_never_shed_later():
    # Capacity cannot fall in this fleet, so the backlog admitted at minute 1 is served, not shed, at minute 2.
    shedding = one_instance([3000.0, 0.0, 0.0], DEADLINE).variants["primary"]
    assert shedding.shed[1:] == [0.0, 0.0] and shedding.backlog[1] == 0


def test_nothing_is_shed_without_overload():
    demand = [100.0, 1100.0, 1200.0, 700.0, 0.0, 1199.0]
    shedding, waiting = one_instance(demand, DEADLINE), one_instance(demand, None)
    assert sum(shedding.variants["primary"].shed) == 0 and shedding.total.failed_requests == 0
    assert shedding.variants["primary"] == waiting.variants["primary"]


def test_the_plan_sheds_at_the_configured_deadline_and_shows_it():
    """dev's fleet on prod's week: millions more than it can serve. No admitted request waits past the
    deadline, the shed ones are failed requests, and the summary says how many were shed."""
    cfg = load_environment("dev")
    deadline = limits(cfg)["deadline_seconds"]
    assert deadline == cfg.admission_deadline_ms / 1000
    plan: Plan = build_plan(cfg, load_catalog(), reference_week())
    total = plan.scenarios["configured"].total
    assert total.shed_requests > 0 and total.rejected_requests == 0
    assert total.wait_max_seconds == pytest.approx(deadline)
    assert total.failed_requests >= total.shed_requests
    assert f"({total.shed_requests:,.0f} shed, 0 rejected)" in render_summary(plan)
