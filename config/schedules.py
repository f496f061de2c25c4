"""Application Auto Scaling cron expressions: parse the six fields and list when they fire.

CloudFormation and moto accept any string here; a five-field cron or a time zone like "JST" only
fails at deploy time, so the config checks parse them at synth time and simulate the firings to
find windows without an end, overlapping windows and two actions at the same instant.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

CRON = re.compile(r"^cron\((.*)\)$")
MONTHS = {
    m: i for i, m in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1)
}
# AWS cron numbers days of the week 1-7 from Sunday; Python's weekday() is 0-6 from Monday.
DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}
FIELDS = (("minutes", 0, 59, {}), ("hours", 0, 23, {}), ("day-of-month", 1, 31, {}), ("month", 1, 12, MONTHS),
          ("day-of-week", 1, 7, DAYS), ("year", 1970, 2199, {}))  # fmt: skip


class CronError(ValueError):
    pass


def time_zone(name: str) -> ZoneInfo:
    """An IANA time zone ("Asia/Tokyo"); abbreviations such as "JST" are refused."""
    if "/" not in name and name != "UTC":
        raise CronError(f"'{name}' is not an IANA time zone name (e.g. Asia/Tokyo, America/New_York)")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown IANA time zone '{name}'") from None


class Cron:
    """A parsed `cron(minutes hours day-of-month month day-of-week year)` expression."""

    def __init__(self, expression: str) -> None:
        match = CRON.match(expression.strip())
        if not match:
            raise CronError(
                f"must look like cron(minutes hours day-of-month month day-of-week year), got '{expression}'"
            )
        parts = match.group(1).split()
        if len(parts) != 6:
            raise CronError(
                f"needs six fields (minutes hours day-of-month month day-of-week year), got {len(parts)}: '{expression}'"
            )
        if (parts[2] == "?") == (parts[4] == "?"):
            raise CronError(f"exactly one of day-of-month and day-of-week must be '?', got '{expression}'")
        self.expression = expression
        self.allowed = [_parse_field(part, *spec) for part, spec in zip(parts, FIELDS, strict=True)]

    def firings(self, zone: ZoneInfo, first_day: date, days: int) -> Iterator[datetime]:
        """Every firing on `days` local calendar days from `first_day`, as aware datetimes."""
        minutes, hours, days_of_month, months, weekdays, years = self.allowed
        for offset in range(days):
            day = first_day + timedelta(days=offset)
            aws_weekday = day.isoweekday() % 7 + 1  # Sunday=1 ... Saturday=7
            if day.month not in months or day.year not in years:
                continue
            if days_of_month is not None and day.day not in days_of_month:
                continue
            if weekdays is not None and aws_weekday not in weekdays:
                continue
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    yield datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)


def _parse_field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int] | None:
    """The values a field allows; None for '?' (no constraint)."""
    if text == "?":
        return None
    values: set[int] = set()
    for item in text.split(","):
        base, _, step_text = item.partition("/")
        step = _number(step_text, name, names) if step_text else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            first_text, last_text = base.split("-", 1)
            first, last = _number(first_text, name, names), _number(last_text, name, names)
        else:
            first = _number(base, name, names)
            last = high if step_text else first
        if not (low <= first <= high and low <= last <= high) or step < 1:
            raise CronError(f"{name} value '{item}' is outside {low}-{high}")
        values.update(range(first, last + 1, step))
    return values


def _number(text: str, name: str, names: dict[str, int]) -> int:
    if text.upper() in names:
        return names[text.upper()]
    if not text.isdigit():
        raise CronError(f"{name} value '{text}' is not supported here (use numbers, names, ranges, lists, steps)")
    return int(text)
