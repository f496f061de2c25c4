"""Each environment judged honestly: its own traffic, peak windows from the traffic, a budget from config."""

from __future__ import annotations

import pytest

from config.loader import load_catalog, load_environment
from config.schema import PlanTraffic
from workbench.planner.build import build_plan
from workbench.planner.environment_traffic import traffic_for
from workbench.planner.reference_week import reference_week
from workbench.planner.summary import render_summary
from workbench.planner.traffic import TrafficError, write_csv
from workbench.planner.verdict import judge


@pytest.fixture(scope="module")
def week():
    return reference_week()


@pytest.mark.parametrize(("env", "scale"), [("dev", 0.1), ("staging", 0.5), ("prod", 1)])
def test_each_environment_replays_its_own_stated_traffic(env, scale, week):
    profile = traffic_for(load_environment(env).planning.traffic)
    assert profile.name == ("reference week" if scale == 1 else f"reference week × {scale:g}")
    assert profile.requests_per_minute == tuple(r * scale for r in week.requests_per_minute)
    assert profile.peaks == week.peaks and profile.events == week.events


def test_dev_on_prod_traffic_is_not_met(week):
    # The case: "Cost vs oracle: 0.88x ... met" with 3.58 million rejected requests: now millions
    # failed, most in the peak windows, whatever the cost (shed at the admission deadline, not left to time out).
    plan = build_plan(load_environment("dev"), load_catalog(), week)
    summary = render_summary(plan)
    assert "### Verdict: not met" in summary
    assert plan.scenarios["configured"].total.shed_requests > 1_000_000
    assert plan.scenarios["configured"].total.failed_in_peaks > 1_000_000
    assert not judge(plan).met
    # Its ceiling cannot carry the week at any cost, and the static fleet at max_capacity shows it.
    assert plan.scenarios["static-max"].total.shortfall_minutes > 0
    assert any(w.startswith("autoscaling.primary.max_capacity 9 serves") for w in plan.warnings)


def test_deleting_every_schedule_does_not_hide_the_shortfall_in_peaks(week):
    cfg = load_environment("prod")
    # At the seeds' 8 min provisioning, reactive scaling alone is late for the release ramps.
    planning = cfg.planning.model_copy(update={"provisioning_minutes": 8})
    unscheduled = cfg.model_copy(
        update={
            "planning": planning,
            "autoscaling": {n: s.model_copy(update={"schedules": []}) for n, s in cfg.autoscaling.items()},
        }
    )
    plan = build_plan(unscheduled, load_catalog(), week)
    configured = plan.scenarios["configured"].total
    # The peak windows come from the traffic, so without schedules the configured fleet is the reactive one.
    assert configured.failed_in_peaks == plan.scenarios["reactive"].total.failed_in_peaks > 0
    assert "- Failed requests in peak windows: " in render_summary(plan)
    assert "### Verdict: not met" in render_summary(plan)


def test_a_recorded_csv_gets_the_reference_calendar_and_its_own_scale(tmp_path, week):
    write_csv(week, tmp_path / "staging-week.csv")
    profile = traffic_for(PlanTraffic(profile="staging-week.csv", scale=2), root=tmp_path)
    assert profile.name == "staging-week.csv × 2"
    assert profile.peaks == week.peaks and profile.zones == week.zones
    assert profile.requests_per_minute[0] == pytest.approx(2 * week.requests_per_minute[0])


def test_a_missing_profile_names_the_field(tmp_path):
    with pytest.raises(TrafficError) as error:
        traffic_for(PlanTraffic(profile="traffic/absent.yaml"), root=tmp_path)
    assert str(error.value).startswith("planning.traffic.profile 'traffic/absent.yaml': ")
    assert "No such file or directory" in str(error.value)
