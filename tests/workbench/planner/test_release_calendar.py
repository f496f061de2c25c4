"""Peak windows from the environment's `release_calendar` (issue 29 §3): the reference week and a recorded
week are judged in the same windows, the config's, not the schedules' nor the traffic file's."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from ruamel.yaml import YAML

from config import ConfigError, load_config_file, load_environment
from config.loader import ENVIRONMENTS_DIR, load_catalog
from config.release_calendar import ReleaseCalendar
from workbench.planner.build import build_plan
from workbench.planner.environment_traffic import calendar_peaks, traffic_of
from workbench.planner.reference_week import reference_week
from workbench.planner.summary import render_summary
from workbench.planner.traffic import write_csv

PROD = YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "prod.yaml").read_text())


@pytest.fixture(scope="module")
def week():
    return reference_week()


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
def test_each_calendar_gives_the_reference_weeks_windows(env, week) -> None:
    """So the reference week's plans are unchanged: the same windows, now read from the config."""
    profile = traffic_of(load_environment(env, against_deployed=False))
    assert profile.peaks == week.peaks and profile.zones == week.zones
    assert {p.name for p in profile.peaks} == {
        "tokyo evening",
        "us-eastern evening",
        "shonen-jump",
        "shonen-magazine",
        "friday-chapters",
    }


def load_prod(tmp_path, edit) -> object:
    raw = copy.deepcopy(PROD)
    edit(raw)
    path = tmp_path / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    return load_config_file(path, "prod")


def one_canary(raw: dict) -> None:
    """prod before the tuner gave the canary a second instance: the spike then fails requests there."""
    raw["autoscaling"]["canary"]["min_capacity"] = 1
    raw["variants"][1]["initial_instance_count"] = 1


def test_a_recorded_week_is_judged_in_the_configs_windows_not_the_files(tmp_path, week) -> None:
    """The same counts as a CSV: with the config's calendar, the unannounced spike's failed requests (Tuesday
    13:00 JST, outside every window) are outside the peaks; announce a release there and they are inside."""
    write_csv(week, tmp_path / "week.csv")
    cfg = load_prod(tmp_path, one_canary)
    as_recorded = build_plan(cfg, load_catalog(), traffic_of(cfg, tmp_path / "week.csv"))
    configured = as_recorded.scenarios["configured"].total
    assert configured.failed_requests > 0 and configured.failed_in_peaks == 0

    def announce(raw: dict) -> None:
        one_canary(raw)
        raw["release_calendar"]["releases"].append(
            {"name": "tuesday-drop", "weekdays": ["TUE"], "at": "13:00", "timezone": "Asia/Tokyo", "hours": 3}
        )

    announced = load_prod(tmp_path, announce)
    plan = build_plan(announced, load_catalog(), traffic_of(announced, tmp_path / "week.csv"))
    in_peaks = plan.scenarios["configured"].total.failed_in_peaks
    assert in_peaks == configured.failed_requests  # every failed request is in the spike
    assert f"- Failed requests in peak windows: {in_peaks:,.0f} against a budget of 0: not met" in render_summary(plan)
    (traffic,) = [line for line in render_summary(plan).splitlines() if line.startswith("- traffic: week.csv")]
    assert "tuesday-drop" in traffic and traffic.endswith("(release_calendar, not the schedules)")


def test_the_us_evening_follows_new_york_across_the_dst_switch() -> None:
    calendar = ReleaseCalendar.model_validate(
        {"audiences": {"us": {"timezone": "America/New_York", "evening": {"start": "18:00", "end": "22:00"}}}}
    )
    first = datetime(2026, 10, 31, 0, 0, tzinfo=UTC)  # Saturday; New York leaves EDT on Sunday 1 Nov
    starts = [first.hour + p.start_minute / 60 for p in calendar_peaks(calendar, first, 3 * 24 * 60)]
    # Friday's evening, cut at the span's start; 18:00 EDT = 22:00 UTC; then 18:00 EST = 23:00 UTC.
    assert starts == [0, 22, 24 + 23, 48 + 23]


def test_a_window_past_midnight_and_one_cut_by_the_span() -> None:
    calendar = ReleaseCalendar.model_validate(
        {"audiences": {"tokyo": {"timezone": "Asia/Tokyo", "evening": {"start": "22:00", "end": "02:00"}}}}
    )
    first = datetime(2026, 10, 29, 0, 0, tzinfo=UTC)  # 09:00 JST
    peaks = calendar_peaks(calendar, first, 24 * 60)
    # 22:00-02:00 JST = 13:00-17:00 UTC; the day before's window ended at 17:00 UTC on the 28th: outside.
    assert [(p.start_minute, p.end_minute) for p in peaks] == [(13 * 60, 17 * 60)]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda cal: cal["audiences"]["tokyo"].update(timezone="JST"),
            "release_calendar.audiences.tokyo.timezone: 'JST' is an abbreviation, not a zone; for the clocks people read there use Asia/Tokyo, got 'JST'",
        ),
        (
            lambda cal: cal["audiences"]["tokyo"]["evening"].update(end="18:00"),
            "release_calendar.audiences.tokyo.evening.end: must differ from start, got '18:00'",
        ),
        (
            lambda cal: cal["releases"][0].update(at="6 PM"),
            'release_calendar.releases[0].at: must be a quoted local time "HH:MM" such as "18:00", got \'6 PM\'',
        ),
        (  # not text (a number where the time goes): the same message as the reference week's, one validator
            lambda cal: cal["releases"][0].update(at=1080),
            'release_calendar.releases[0].at: must be a quoted local time "HH:MM" such as "18:00", got 1080',
        ),
        (
            lambda cal: cal["releases"][0].update(weekdays=["Monday"]),
            "release_calendar.releases[0].weekdays[0]: Input should be 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT' "
            "or 'SUN', got 'Monday'",
        ),
    ],
)
def test_a_bad_calendar_is_refused_by_field(tmp_path, edit, problem) -> None:
    with pytest.raises(ConfigError) as error:
        load_prod(tmp_path, lambda raw: edit(raw["release_calendar"]))
    assert [f"{field}: {message}" for field, message in error.value.problems] == [problem]


def test_an_environment_without_a_calendar_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError) as error:
        load_prod(tmp_path, lambda raw: raw.pop("release_calendar"))
    assert [f"{field}: {message}" for field, message in error.value.problems] == ["release_calendar: Field required"]
