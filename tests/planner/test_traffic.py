"""The traffic the planner replays: the reference week against the seeds, and the CSV format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import mean
from zoneinfo import ZoneInfo

import pytest
from ruamel.yaml import YAML

from planner.traffic import REFERENCE_WEEK, TrafficError, TrafficProfile, read_csv, reference_week, write_csv

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


def write_rows(tmp_path: Path, rows: list[str], header: str = "timestamp,requests") -> Path:
    path = tmp_path / "traffic.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def minute_rows(count: int, start: str = "2026-10-29T00:00:00+09:00", value: str = "100") -> list[str]:
    first = datetime.fromisoformat(start)
    return [f"{(first + timedelta(minutes=i)).isoformat()},{value}" for i in range(count)]


# --- the reference week --------------------------------------------------------------------------


def test_reference_week_is_seven_days_from_thursday_midnight_tokyo(week):
    assert week.name == "reference week"
    assert len(week.requests_per_minute) == 7 * 1440
    assert week.start == datetime(2026, 10, 28, 15, 0, tzinfo=UTC)
    assert week.time_at(60) == datetime(2026, 10, 28, 16, 0, tzinfo=UTC)
    assert all(r >= 0 for r in week.requests_per_minute)


def test_reference_week_is_deterministic(week):
    assert reference_week() == week


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


# --- reference_week.yaml validation --------------------------------------------------------------


SMALL_WEEK = """\
start: 2026-10-29T00:00
timezone: Asia/Tokyo
days: 1
audiences:
  tokyo:
    timezone: {zone}
    hourly: [{hourly}]
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
        "small.yaml line 6, column 15: audiences.tokyo.timezone: unknown time zone 'JST'; "
        "use an IANA name such as Asia/Tokyo or America/New_York"
    )


def test_hourly_must_have_24_values(tmp_path):
    with pytest.raises(TrafficError) as error:
        reference_week(small_week(tmp_path, hours=23))
    assert str(error.value) == (
        "small.yaml line 7, column 13: audiences.tokyo.hourly: "
        "must list 24 values (requests/min at local hours 0-23), got 23 values"
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "multiplier: 1.8 ",
            "multiplier: 0.5 ",
            r"releases\[shonen-magazine\]\.multiplier: must be a number from 1 to 100, got 0\.5",
        ),
        (
            "weekdays: [WED]",
            "weekdays: [WEDNESDAY]",
            r"releases\[shonen-magazine\]\.weekdays: unknown weekday 'WEDNESDAY'; allowed: MON, TUE",
        ),
        (
            "at: 2026-11-03T13:00",
            "at: 2026-11-06T13:00",
            r"spikes\[unannounced-viral-spike\]\.at: .* is outside the week",
        ),
        ('at: "18:00"', "at: 6pm", r'releases\[shonen-jump\]\.at: must be a quoted local time "HH:MM"'),
        ("days: 7 ", "weeks: 1 ", r"line 10, column 1: weeks: unknown setting; allowed: start, timezone, days"),
        ("percent: 5 ", "percent: 5%", r"noise\.percent: must be a number from 0 to 50, got '5%'"),
    ],
)
def test_yaml_errors_name_the_field(tmp_path, old, new, expected):
    text = REFERENCE_WEEK.read_text()
    assert old in text
    path = tmp_path / "week.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(TrafficError, match=expected):
        reference_week(path)


def test_missing_yaml_is_a_traffic_error(tmp_path):
    with pytest.raises(TrafficError, match="cannot read"):
        reference_week(tmp_path / "absent.yaml")


# --- CSV -----------------------------------------------------------------------------------------


def test_csv_round_trip(tmp_path, week):
    path = tmp_path / "week.csv"
    write_csv(week, path)
    again = read_csv(path)
    assert again.name == "week.csv"
    assert again.start == week.start
    assert again.requests_per_minute == week.requests_per_minute


def test_csv_accepts_offsets_and_z(tmp_path):
    rows = minute_rows(60, start="2026-10-28T15:00:00Z")
    profile = read_csv(write_rows(tmp_path, rows))
    assert profile.start == datetime(2026, 10, 28, 15, tzinfo=UTC)
    assert profile.start == read_csv(write_rows(tmp_path, minute_rows(60))).start  # +09:00 midnight, same instant
    assert profile.requests_per_minute == (100.0,) * 60
    assert profile.time_at(59) == datetime(2026, 10, 28, 15, 59, tzinfo=UTC)


def replace_row(rows: list[str], index: int, row: str) -> list[str]:
    return [*rows[:index], row, *rows[index + 1 :]]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (
            replace_row(minute_rows(60), 15, "2026-10-29T00:15:00+09:00,-3"),
            "traffic.csv line 17: requests must be a non-negative number, got '-3'",
        ),
        (
            replace_row(minute_rows(60), 3, "2026-10-29T00:03:00+09:00,lots"),
            "traffic.csv line 5: requests must be a non-negative number, got 'lots'",
        ),
        (
            replace_row(minute_rows(60), 3, "2026-10-29T00:03:00+09:00,nan"),
            "traffic.csv line 5: requests must be a non-negative number, got 'nan'",
        ),
        (
            minute_rows(3) + minute_rows(60, start="2026-10-29T00:04:00+09:00"),
            "traffic.csv line 5: timestamp 2026-10-29T00:04:00+09:00 is not one minute after the previous row (2026-10-28T15:02:00+00:00)",
        ),
        (
            minute_rows(3) + minute_rows(60, start="2026-10-29T00:02:00+09:00"),
            "traffic.csv line 5: timestamp 2026-10-29T00:02:00+09:00 is not one minute after the previous row",
        ),
        (
            replace_row(minute_rows(60), 0, "29/10/2026 00:00,100"),
            "traffic.csv line 2: timestamp must be ISO-8601 with an offset or Z (e.g. 2026-10-29T00:00:00+09:00), got '29/10/2026 00:00'",
        ),
        (
            replace_row(minute_rows(60), 0, "2026-10-29T00:00:00,100"),
            "traffic.csv line 2: timestamp must be ISO-8601 with an offset or Z",
        ),
        (
            replace_row(minute_rows(60), 0, "2026-10-29T00:00:30Z,100"),
            "traffic.csv line 2: timestamp must be on a whole minute",
        ),
        (
            replace_row(minute_rows(60), 7, "2026-10-29T00:07:00+09:00"),
            "traffic.csv line 9: expected 2 fields (timestamp,requests), got 1",
        ),
        (minute_rows(59), "traffic.csv: 59 data rows; at least 60 (one per minute) are needed"),
    ],
)
def test_csv_errors_say_where_and_what(tmp_path, rows, expected):
    with pytest.raises(TrafficError) as error:
        read_csv(write_rows(tmp_path, rows))
    assert expected in str(error.value)


def test_csv_wrong_header(tmp_path):
    with pytest.raises(TrafficError) as error:
        read_csv(write_rows(tmp_path, minute_rows(60), header="time,rpm"))
    assert "traffic.csv line 1: header must be 'timestamp,requests', got 'time,rpm'" in str(error.value)


def test_csv_more_than_31_days(tmp_path):
    with pytest.raises(TrafficError) as error:
        read_csv(write_rows(tmp_path, minute_rows(31 * 1440 + 1, start="2026-10-01T00:00:00Z")))
    assert f"traffic.csv line {31 * 1440 + 2}: too many rows: at most 31 days (44640 minutes)" in str(error.value)


def test_csv_missing_and_empty_files(tmp_path):
    with pytest.raises(TrafficError, match="absent.csv: cannot read: No such file or directory"):
        read_csv(tmp_path / "absent.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(TrafficError, match="empty.csv: file is empty; expected the header 'timestamp,requests'"):
        read_csv(empty)
    header_only = write_rows(tmp_path, [])
    with pytest.raises(TrafficError, match="traffic.csv: 0 data rows; at least 60"):
        read_csv(header_only)


def test_release_already_under_way_at_the_start_is_clipped(tmp_path):
    # A day starting at 19:00 JST on Monday, an hour into Shonen Jump's three-hour surge.
    profile = reference_week(variant_week(tmp_path, start="2026-11-02T19:00", days=1, spikes=[], noise=None))
    assert [(e.name, e.start_minute, e.end_minute) for e in profile.events] == [("shonen-jump", 0, 120)]
    # Factor 1 + (2 - 1) * 120/165 in the first minute, as the full week has it at 19:00.
    quiet_week = reference_week(variant_week(tmp_path, noise=None))
    assert profile.requests_per_minute[0] == pytest.approx(rate_at(quiet_week, jst(11, 2, 19)))
