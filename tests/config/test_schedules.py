"""The AWS cron dialect on top of croniter: day numbering, '?', years, DST and errors."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from config.schedules import Cron, CronError, time_zone

NEW_YORK = time_zone("America/New_York")
TOKYO = time_zone("Asia/Tokyo")
WEEK = date(2026, 6, 7)  # a Sunday


def weekdays(expression: str) -> list[str]:
    return [f"{moment:%a}" for moment in Cron(expression).firings(TOKYO, WEEK, 7)]


def utc(moments) -> list[str]:
    return [f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}" for moment in moments]


def test_aws_day_one_is_sunday() -> None:
    assert weekdays("cron(0 9 ? * 1 *)") == ["Sun"]
    assert weekdays("cron(0 9 ? * 7 *)") == ["Sat"]


def test_two_to_six_is_monday_to_friday() -> None:
    """In Vixie cron (croniter) 2-6 would be Tuesday to Saturday."""
    assert weekdays("cron(0 18 ? * 2-6 *)") == ["Mon", "Tue", "Wed", "Thu", "Fri"]


def test_day_names_pass_through() -> None:
    assert weekdays("cron(0 18 ? * TUE-FRI *)") == ["Tue", "Wed", "Thu", "Fri"]
    assert weekdays("cron(0 18 ? * mon,SAT *)") == ["Mon", "Sat"]
    assert weekdays("cron(0 18 ? * MON-2 *)") == ["Mon"]  # a one-day range: croniter would widen it to every day


def test_day_of_month_with_question_mark_for_the_week() -> None:
    assert [f"{m:%m-%d}" for m in Cron("cron(0 9 1,15 * ? *)").firings(TOKYO, date(2026, 1, 1), 59)] == [
        "01-01",
        "01-15",
        "02-01",
        "02-15",
    ]


def test_new_york_follows_dst_across_the_first_of_november() -> None:
    moments = list(Cron("cron(45 17 * * ? *)").firings(NEW_YORK, date(2026, 10, 31), 2))
    assert utc(moments) == ["2026-10-31 21:45", "2026-11-01 22:45"]
    assert all(moment.tzinfo is NEW_YORK for moment in moments)
    assert [f"{moment:%H:%M %Z}" for moment in moments] == ["17:45 EDT", "17:45 EST"]


def test_tokyo_has_no_dst() -> None:
    moments = Cron("cron(45 17 * * ? *)").firings(TOKYO, date(2026, 1, 1), 365)
    assert set(f"{moment.astimezone(UTC):%H:%M}" for moment in moments) == {"08:45"}


def test_fall_back_night_fires_once() -> None:
    """01:30 happens twice in New York on 1 Nov 2026 (EDT, then EST); croniter yields both."""
    assert utc(Cron("cron(30 1 * * ? *)").firings(NEW_YORK, date(2026, 11, 1), 1)) == ["2026-11-01 05:30"]
    assert utc(Cron("cron(0/20 1 * * ? *)").firings(NEW_YORK, date(2026, 11, 1), 1)) == [
        "2026-11-01 05:00",
        "2026-11-01 05:20",
        "2026-11-01 05:40",
    ]


def test_spring_forward_gap_moves_to_three() -> None:
    """02:30 does not exist in New York on 8 Mar 2026; croniter fires at 03:00 EDT instead."""
    moments = list(Cron("cron(30 2 * * ? *)").firings(NEW_YORK, date(2026, 3, 8), 2))
    assert [f"{moment:%m-%d %H:%M %Z}" for moment in moments] == ["03-08 03:00 EDT", "03-09 02:30 EDT"]


def test_year_field_filters_firings() -> None:
    assert list(Cron("cron(0 9 * * ? 2027)").firings(TOKYO, date(2026, 1, 1), 365)) == []
    assert utc(Cron("cron(0 9 * * ? 2026,2028-2030)").firings(TOKYO, date(2026, 12, 31), 2)) == ["2026-12-31 00:00"]
    assert utc(Cron("cron(0 9 * * ? 2027)").firings(TOKYO, date(2026, 12, 31), 2)) == ["2027-01-01 00:00"]


def test_a_day_that_never_comes_yields_nothing() -> None:
    assert list(Cron("cron(0 9 31 2 ? *)").firings(TOKYO, date(2026, 1, 1), 400)) == []


def test_firings_between_includes_start_and_excludes_end() -> None:
    hourly = Cron("cron(0 * * * ? *)")
    start = datetime(2026, 6, 1, 9, 0, tzinfo=TOKYO)
    end = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)  # 12:00 in Tokyo; any zone will do
    moments = list(hourly.firings_between(TOKYO, start, end))
    assert [f"{moment:%H:%M}" for moment in moments] == ["09:00", "10:00", "11:00"]
    assert all(moment.tzinfo is TOKYO for moment in moments)
    later = datetime(2026, 6, 1, 0, 0, 1, tzinfo=UTC)  # one second after 09:00 in Tokyo
    assert [f"{moment:%H:%M}" for moment in hourly.firings_between(TOKYO, later, end)] == ["10:00", "11:00"]
    assert list(hourly.firings_between(TOKYO, end, start)) == []


def test_firings_is_firings_between_local_midnights() -> None:
    peak = Cron("cron(0 0,23 * * ? *)")
    assert [f"{m:%d %H:%M}" for m in peak.firings(TOKYO, date(2026, 6, 1), 1)] == ["01 00:00", "01 23:00"]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "cron(45 17 * * *)",
            "needs six fields (minutes hours day-of-month month day-of-week year), got 5: 'cron(45 17 * * *)'",
        ),
        (
            "rate(5 minutes)",
            "must look like cron(minutes hours day-of-month month day-of-week year), got 'rate(5 minutes)'",
        ),
        ("cron(0 9 ? * ? *)", "exactly one of day-of-month and day-of-week must be '?', got 'cron(0 9 ? * ? *)'"),
        ("cron(0 9 * * MON *)", "exactly one of day-of-month and day-of-week must be '?', got 'cron(0 9 * * MON *)'"),
        ("cron(61 9 * * ? *)", "minutes value '61' is outside 0-59 in 'cron(61 9 * * ? *)'"),
        ("cron(0 9-24 * * ? *)", "hours value '9-24' is outside 0-23 in 'cron(0 9-24 * * ? *)'"),
        ("cron(0 9 ? * 0 *)", "day-of-week value '0' is outside 1-7 in 'cron(0 9 ? * 0 *)'"),
        ("cron(0 9 ? * 2-8 *)", "day-of-week value '2-8' is outside 1-7 in 'cron(0 9 ? * 2-8 *)'"),
        ("cron(0 9 * * ? 2200)", "year value '2200' is outside 1970-2199 in 'cron(0 9 * * ? 2200)'"),
        (
            "cron(0 9 L * ? *)",
            "day-of-month value 'L' is not supported here (use numbers, names, ranges, lists, steps) "
            "in 'cron(0 9 L * ? *)'",
        ),
        (
            "cron(0 9 ? * 6#3 *)",
            "day-of-week value '6#3' is not supported here (use numbers, names, ranges, lists, steps) "
            "in 'cron(0 9 ? * 6#3 *)'",
        ),
        (
            "cron(zero 9 * * ? *)",
            "minutes value 'zero' is not supported here (use numbers, names, ranges, lists, steps) "
            "in 'cron(zero 9 * * ? *)'",
        ),
        (
            "cron(R 9 * * ? *)",  # croniter would pick a random minute
            "minutes value 'R' is not supported here (use numbers, names, ranges, lists, steps) in 'cron(R 9 * * ? *)'",
        ),
        (
            "cron(0 9 * JAN-SUN ? *)",
            "month value 'JAN-SUN' is not supported here (use numbers, names, ranges, lists, steps) "
            "in 'cron(0 9 * JAN-SUN ? *)'",
        ),
    ],
)
def test_refused_expressions_name_the_value(expression: str, message: str) -> None:
    with pytest.raises(CronError) as raised:
        Cron(expression)
    assert str(raised.value) == message


@pytest.mark.parametrize("day", ["8", "0", "7-8", "1#2", "L", "5L", "H", "?,1", "1//2", "*/0", "1-2-3"])
def test_bad_day_of_week_only_raises_cron_error(day: str) -> None:
    """Whatever croniter would say about the translated field, the caller sees a CronError."""
    with pytest.raises(CronError, match=r"^day-of-week value .* in 'cron\(0 9 \? \* "):
        Cron(f"cron(0 9 ? * {day} *)")


def test_abbreviated_time_zones_are_refused() -> None:
    with pytest.raises(CronError, match="'JST' is an abbreviation, not a zone; .* use Asia/Tokyo$"):
        time_zone("JST")


@pytest.mark.parametrize(
    ("written", "meant"),
    [("EST", "America/New_York"), ("EDT", "America/New_York"),
     ("CST", "America/Chicago"), ("PST", "America/Los_Angeles"),
     ("MST", "America/Denver"), ("HST", "Pacific/Honolulu")],
)
def test_a_us_abbreviation_suggests_the_zone_that_keeps_its_clock(written: str, meant: str) -> None:
    """Issue 53: tzdata links EST to America/Panama (no daylight saving): suggesting that was literally right and
    an hour off New York for most of the year."""
    with pytest.raises(CronError) as raised:
        time_zone(written)
    assert f"use {meant}" in str(raised.value)
    assert "America/Panama" not in str(raised.value).split("use ")[-1]
    assert time_zone(meant.split()[0]).key == meant.split()[0]  # the suggestion is itself accepted
