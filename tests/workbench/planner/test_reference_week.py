"""The reference week the planner replays, against the seeds; and the errors its YAML can have."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import mean
from zoneinfo import ZoneInfo

import pytest
from ruamel.yaml import YAML

import workbench.planner.reference_week
from workbench.planner.reference_week import REFERENCE_WEEK, reference_week
from workbench.planner.traffic import TrafficError, TrafficProfile

TOKYO = ZoneInfo("Asia/Tokyo")
NEW_YORK = ZoneInfo("America/New_York")


@pytest.fixture(scope="module")
def week() -> TrafficProfile:
    return reference_week()


def minute_of(profile: TrafficProfile, when: datetime) -> int:
    return round((when - profile.start) / timedelta(minutes=1))


def rate_at(profile: TrafficProfile, when: datetime) -> float:
    return profile.requests_per_minute[minute_of(profile, when)]


def mean_between(profile: TrafficProfile, start: datetime, end: datetime) -> float:
    return mean(profile.requests_per_minute[minute_of(profile, start) : minute_of(profile, end)])


def variant_week(tmp_path: Path, **changes) -> Path:
    """The reference YAML with top-level settings replaced (None removes one), written to tmp_path."""
    yaml = YAML(typ="rt")
    data = yaml.load(REFERENCE_WEEK.read_text())
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    path = tmp_path / "week.yaml"
    with path.open("w") as file:
        yaml.dump(data, file)
    return path


def edited_week(tmp_path: Path, old: str, new: str) -> Path:
    """The reference YAML with its first `old` replaced by `new`, written to tmp_path."""
    text = REFERENCE_WEEK.read_text()
    assert old in text
    path = tmp_path / "week.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_reference_week_is_seven_days_from_thursday_midnight_tokyo(week):
    assert week.name == "reference week"
    assert len(week.requests_per_minute) == 7 * 1440
    assert week.start == datetime(2026, 10, 28, 15, 0, tzinfo=UTC)
    assert week.time_at(60) == datetime(2026, 10, 28, 16, 0, tzinfo=UTC)
    assert all(r >= 0 for r in week.requests_per_minute)


def test_reference_week_is_deterministic(week):
    workbench.planner.reference_week._built.cache_clear()  # built again, not the profile kept for this process
    assert reference_week() == week


def test_an_edited_file_is_built_again(tmp_path, week):
    path = tmp_path / "week.yaml"
    path.write_text(REFERENCE_WEEK.read_text())
    assert reference_week(path).requests_per_minute == week.requests_per_minute
    edited = edited_week(tmp_path, "seed: ", "seed: 1")  # the same file, another noise seed
    assert edited == path and reference_week(path).requests_per_minute != week.requests_per_minute


def test_noise_changes_with_the_seed(tmp_path, week):
    other = reference_week(variant_week(tmp_path, noise={"seed": 8, "percent": 5}))
    assert other.requests_per_minute != week.requests_per_minute


def test_three_am_tokyo_is_about_500_per_minute(week):
    # Seed 002 story 4: "At 3 AM JST, traffic dropped to ~500 requests/minute". Thu 29 Oct has no release.
    for day in (29, 30, 31):
        for minute in range(0, 60, 10):
            assert 400 <= rate_at(week, datetime(2026, 10, day, 3, minute, tzinfo=TOKYO)) <= 650


def test_us_peak_follows_new_york_local_time_across_the_dst_switch(tmp_path):
    # Only the US audience, no events, no noise: the peak must stay at 18:00-22:00 New York time.
    reference = YAML(typ="rt").load(REFERENCE_WEEK.read_text())
    us_only = variant_week(
        tmp_path, audiences={"us-eastern": reference["audiences"]["us-eastern"]}, releases=[], spikes=[], noise=None
    )
    profile = reference_week(us_only)
    for day in (datetime(2026, 10, 30), datetime(2026, 11, 2)):  # EDT, then EST
        peak = mean_between(profile, day.replace(hour=18, tzinfo=NEW_YORK), day.replace(hour=22, tzinfo=NEW_YORK))
        afternoon = mean_between(profile, day.replace(hour=13, tzinfo=NEW_YORK), day.replace(hour=16, tzinfo=NEW_YORK))
        assert peak > 3 * afternoon
        assert rate_at(profile, day.replace(hour=19, tzinfo=NEW_YORK)) == 1200
    # The same UTC minute is 18:30 EDT (in the peak) before the switch and 17:30 EST (not yet) after.
    assert rate_at(profile, datetime(2026, 10, 30, 22, 30, tzinfo=UTC)) == 1100
    assert rate_at(profile, datetime(2026, 11, 2, 22, 30, tzinfo=UTC)) == 800
    assert rate_at(profile, datetime(2026, 11, 2, 23, 30, tzinfo=UTC)) == 1100


def test_us_peak_moves_an_hour_later_in_utc_in_the_reference_week(week):
    # Tokyo's contribution at 22:00-23:00 UTC (07:00-08:00 JST) is the same on both days; the US half is not.
    before = mean_between(week, datetime(2026, 10, 30, 22, tzinfo=UTC), datetime(2026, 10, 30, 23, tzinfo=UTC))
    after = mean_between(week, datetime(2026, 11, 2, 22, tzinfo=UTC), datetime(2026, 11, 2, 23, tzinfo=UTC))
    assert before > after + 200
    for day in (datetime(2026, 10, 30), datetime(2026, 11, 2)):
        peak = mean_between(week, day.replace(hour=18, tzinfo=NEW_YORK), day.replace(hour=22, tzinfo=NEW_YORK))
        afternoon = mean_between(week, day.replace(hour=13, tzinfo=NEW_YORK), day.replace(hour=16, tzinfo=NEW_YORK))
        assert peak > 2 * afternoon


def jst(month: int, day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=TOKYO)


def test_monday_release_roughly_doubles_traffic(week):
    # 30 minutes after Shonen Jump's 18:00 JST release vs the same minutes on Tuesday (no release).
    monday = mean_between(week, jst(11, 2, 18, 25), jst(11, 2, 18, 35))
    tuesday = mean_between(week, jst(11, 3, 18, 25), jst(11, 3, 18, 35))
    assert 1.7 <= monday / tuesday <= 2.2


def test_unannounced_spike_triples_traffic_within_15_minutes(week):
    # Seed 002 story 7: "traffic spiked 3x in 15 minutes". Pre-spike level: the same minutes a day earlier.
    def ratio(hour: int, minute: int) -> float:
        spike_day = mean_between(week, jst(11, 3, hour, minute), jst(11, 3, hour, minute + 5))
        day_before = mean_between(week, jst(11, 2, hour, minute), jst(11, 2, hour, minute + 5))
        return spike_day / day_before

    assert 0.9 <= ratio(12, 50) <= 1.1
    assert 1.7 <= ratio(13, 5) <= 2.2  # halfway up a linear ramp: 1 + 2 * 7/15 on average
    assert 2.7 <= ratio(13, 15) <= 3.3
    assert 0.9 <= ratio(15, 5) <= 1.1


def test_events_name_the_week_releases_and_the_spike(week):
    starts = {(e.name, e.kind, week.time_at(e.start_minute).astimezone(TOKYO)) for e in week.events}
    assert starts == {
        ("friday-chapters", "release", datetime(2026, 10, 30, 18, 0, tzinfo=TOKYO)),
        ("shonen-jump", "release", datetime(2026, 11, 2, 18, 0, tzinfo=TOKYO)),
        ("shonen-magazine", "release", datetime(2026, 11, 4, 18, 0, tzinfo=TOKYO)),
        ("unannounced-viral-spike", "spike", datetime(2026, 11, 3, 13, 0, tzinfo=TOKYO)),
    }
    hours = {e.name: (e.end_minute - e.start_minute) / 60 for e in week.events}
    assert hours == {"friday-chapters": 4, "shonen-jump": 3, "shonen-magazine": 3, "unannounced-viral-spike": 2}


def windows_in(profile: TrafficProfile, name: str, zone: ZoneInfo) -> list[tuple[datetime, datetime]]:
    return [
        (profile.time_at(p.start_minute).astimezone(zone), profile.time_at(p.end_minute).astimezone(zone))
        for p in profile.peaks
        if p.name == name
    ]


def test_peak_windows_are_each_audience_evening_in_its_own_clock(week):
    tokyo = windows_in(week, "tokyo evening", TOKYO)
    assert tokyo == [(jst(10, 29 + d, 18), jst(10, 29 + d, 22)) for d in range(3)] + [
        (jst(11, d, 18), jst(11, d, 22)) for d in range(1, 5)
    ]
    us = windows_in(week, "us-eastern evening", NEW_YORK)
    # 18:00-22:00 in New York on both sides of the switch to EST (1 Nov): the UTC hour moves, the local one not.
    assert all((start.hour, end.hour) == (18, 22) for start, end in us)
    assert {start.utcoffset() for start, _ in us} == {timedelta(hours=-4), timedelta(hours=-5)}
    assert len(us) == 7  # Wed 28 Oct (Thu 07:00 in Tokyo) to Tue 3 Nov; Wed 4 Nov 18:00 EST is after the week


def test_releases_are_peak_windows_and_spikes_are_not(week):
    peaks = {p.name: (p.start_minute, p.end_minute) for p in week.peaks}
    for event in week.events:
        if event.kind == "release":
            assert peaks[event.name] == (event.start_minute, event.end_minute)
    assert "unannounced-viral-spike" not in peaks
    assert all(p.kind == "peak" for p in week.peaks)


def test_profile_names_the_audiences_time_zones(week):
    assert week.zones == (("tokyo", "Asia/Tokyo"), ("us-eastern", "America/New_York"))


def test_release_already_under_way_at_the_start_is_clipped(tmp_path):
    # A day starting at 19:00 JST on Monday, an hour into Shonen Jump's three-hour surge.
    profile = reference_week(variant_week(tmp_path, start="2026-11-02T19:00", days=1, spikes=[], noise=None))
    assert [(e.name, e.start_minute, e.end_minute) for e in profile.events] == [("shonen-jump", 0, 120)]
    # Factor 1 + (2 - 1) * 120/165 in the first minute, as the full week has it at 19:00.
    quiet_week = reference_week(variant_week(tmp_path, noise=None))
    assert profile.requests_per_minute[0] == pytest.approx(rate_at(quiet_week, jst(11, 2, 19)))


# --- reference_week.yaml validation --------------------------------------------------------------


SMALL_WEEK = """\
start: 2026-10-29T00:00
timezone: Asia/Tokyo
days: 1
audiences:
  tokyo:
    timezone: {zone}
    hourly: [{hourly}]
    peak: {{start: "18:00", end: "22:00"}}
"""


def small_week(tmp_path: Path, zone: str = "Asia/Tokyo", hours: int = 24) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL_WEEK.format(zone=zone, hourly=", ".join(["100"] * hours)))
    return path


def test_small_week_without_events_or_noise(tmp_path):
    profile = reference_week(small_week(tmp_path))
    assert profile.name == "small.yaml"
    assert profile.requests_per_minute == (100.0,) * 1440
    assert profile.events == ()


def test_unknown_time_zone_is_named(tmp_path):
    with pytest.raises(TrafficError) as error:
        reference_week(small_week(tmp_path, zone="JST"))
    assert str(error.value) == (
        "small.yaml: audiences.tokyo.timezone: "
        "'JST' is an abbreviation, not a zone; for the clocks people read there use Asia/Tokyo, got 'JST'"
    )


def test_hourly_must_have_24_values(tmp_path):
    with pytest.raises(TrafficError) as error:
        reference_week(small_week(tmp_path, hours=23))
    assert str(error.value) == (
        "small.yaml: audiences.tokyo.hourly: List should have at least 24 items after validation, not 23, "
        f"got {[100] * 23!r}"
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "multiplier: 1.8 ",
            "multiplier: 0.5 ",
            "releases[1].multiplier: Input should be greater than or equal to 1, got 0.5",
        ),
        (
            "weekdays: [WED]",
            "weekdays: [WEDNESDAY]",
            "releases[1].weekdays[0]: "
            "Input should be 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT' or 'SUN', got 'WEDNESDAY'",
        ),
        (
            "at: 2026-11-03T13:00",
            "at: 2026-11-06T13:00",
            "spikes[0].at: must fall inside the week, "
            "from 2026-10-29T00:00:00+09:00 up to 2026-11-05T00:00:00+09:00, got '2026-11-06T13:00'",
        ),
        (
            'at: "18:00"',
            "at: 6pm",
            """releases[0].at: must be a quoted local time "HH:MM" such as "18:00", got '6pm'""",
        ),
        (
            "hours: 3 ",
            "hours: 0.25 ",
            "releases[0].hours: must be longer than ramp_minutes (15 min), got 0.25",
        ),
        (
            "start: 2026-10-29T00:00",
            "start: 2026-10-29T00:00+09:00",
            "start: must be a local date and time such as 2026-10-29T00:00, without an offset, "
            "got '2026-10-29T00:00+09:00'",
        ),
        ("percent: 5 ", "percent: 5%", "noise.percent: Input should be a valid number, got '5%'"),
        (
            'peak: {start: "18:00", end: "22:00"}   #',
            'peak: {start: "18:00", end: "18:00"}   #',
            "audiences.us-eastern.peak.end: must differ from start, got '18:00'",
        ),
        ("seed: 7 ", "seed: true ", "noise.seed: Input should be a valid integer, got True"),
    ],
)
def test_yaml_errors_name_the_field(tmp_path, old, new, expected):
    with pytest.raises(TrafficError) as error:
        reference_week(edited_week(tmp_path, old, new))
    assert str(error.value) == f"week.yaml: {expected}"


def test_yaml_errors_are_all_reported_at_once(tmp_path):
    path = edited_week(tmp_path, "days: 7 ", "weeks: 1 ")
    path.write_text(path.read_text().replace("multiplier: 1.8 ", "multiplier: 0.5 "))
    with pytest.raises(TrafficError) as error:
        reference_week(path)
    assert str(error.value).splitlines() == [
        "week.yaml: days: Field required",
        "week.yaml: releases[1].multiplier: Input should be greater than or equal to 1, got 0.5",
        "week.yaml: weeks: Extra inputs are not permitted, got 1",
    ]


def test_yaml_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "week.yaml"
    path.write_text("- 1\n")
    with pytest.raises(TrafficError) as error:
        reference_week(path)
    assert str(error.value) == "week.yaml: (file): Input should be a valid dictionary or instance of Week, got [1]"


def test_missing_yaml_is_a_traffic_error(tmp_path):
    with pytest.raises(TrafficError, match="absent.yaml: cannot read: No such file or directory"):
        reference_week(tmp_path / "absent.yaml")
