"""Application Auto Scaling cron expressions: check the six fields and list when they fire.

CloudFormation and moto accept any string here; a five-field cron or a time zone like "JST" only
fails at deploy time, so the config checks parse them at synth time and simulate the firings to
find windows without an end, overlapping windows and two actions at the same instant.

Expanding the fields (ranges, steps, lists, names, range checks) and walking the calendar in wall-clock
time across DST is croniter's job: a maintained library instead of a parser of our own. croniter
speaks Vixie cron, so this module keeps only what AWS does differently:
- the `cron(...)` wrapper, exactly six fields, and exactly one of day-of-month / day-of-week being
  '?' (croniter gets '*' for it);
- day-of-week numbers 1-7 from SUNDAY (2 = MON); croniter counts 0-6 from Sunday (1 = MON), so
  numbers are shifted down by one, and 0 and 8 are refused here (croniter would read 7 as Sunday);
- the year field (1970-2199), which croniter's five fields lack: firings are filtered by year here;
- refusing L, W and # (AWS has them, these checks do not simulate them) and croniter's own H and R,
  and reading a one-value range such as 2-2 as that value (croniter widens it to the whole field);
- the fall-back night: a wall time that happens twice fires once (see `_repeated`).

Time zones are decided by the pinned `tzdata` package, not the machine's /usr/share/zoneinfo: the
canonical zone names of its tzdata.zi (`Z` lines; Application Auto Scaling takes "the canonical
names of the IANA time zones", botocore application-autoscaling PutScheduledAction Timezone), and
the zone rules are read from its files, so `right/...`, `posix/...` and aliases such as US/Eastern
are refused wherever this runs.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, CroniterError, croniter

from config.problems import did_you_mean, quote

CRON = re.compile(r"^cron\((.*)\)$")
# One comma-separated item: '*', a value or a range, with an optional step.
ITEM = re.compile(r"^(?:\*|(\w+)(?:-(\w+))?)(?:/([1-9]\d*))?$", re.ASCII)
MONTHS = {
    m: i for i, m in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1)
}
DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}  # AWS numbering
FIELDS = (("minutes", 0, 59, {}), ("hours", 0, 23, {}), ("day-of-month", 1, 31, {}), ("month", 1, 12, MONTHS),
          ("day-of-week", 1, 7, DAYS))  # fmt: skip
YEARS = (1970, 2199)
UNSUPPORTED = "is not supported here (use numbers, names, ranges, lists, steps)"


class CronError(ValueError):
    pass


TZDATA_VERSION = importlib.metadata.version("tzdata")


# Abbreviations people write for a region's clock -> the zone that follows that clock all year. tzdata links
# some of them to a fixed-offset zone (EST -> America/Panama since 2024b): literally right, an hour off New York
# for most of the year.
MEANT_BY_ABBREVIATION = {
    **dict.fromkeys(("EST", "EDT", "ET"), "America/New_York"),
    **dict.fromkeys(("CST", "CDT", "CT"), "America/Chicago"),
    **dict.fromkeys(("MST", "MDT", "MT"), "America/Denver (America/Phoenix for Arizona, which keeps no DST)"),
    **dict.fromkeys(("PST", "PDT", "PT"), "America/Los_Angeles"),
    **dict.fromkeys(("AKST", "AKDT"), "America/Anchorage"),
    **dict.fromkeys(("HST", "HDT"), "Pacific/Honolulu"),
    "JST": "Asia/Tokyo",
}


@cache
def _tzdata_names() -> tuple[frozenset[str], dict[str, str]]:
    """(canonical zone names, alias -> canonical name) as the pinned tzdata's tzdata.zi lists them."""
    text = resources.files("tzdata.zoneinfo").joinpath("tzdata.zi").read_text(encoding="utf-8")
    zones, links = set(), {}
    for line in text.splitlines():
        kind, *rest = line.split() or [""]
        if kind == "Z":
            zones.add(rest[0])
        elif kind == "L":
            links[rest[1]] = rest[0]
    return frozenset(zones), links


def time_zone(name: str) -> ZoneInfo:
    """A canonical IANA time zone ("Asia/Tokyo") from the pinned tzdata; abbreviations such as "JST",
    aliases such as "US/Eastern" and anything tzdata does not list are refused."""
    zones, links = _tzdata_names()
    # "UTC" is tzdata's alias of Etc/UTC, and Application Auto Scaling's own default name for it.
    if name in zones or name == "UTC":
        return _load_zone(name)
    if name in MEANT_BY_ABBREVIATION:
        meant = MEANT_BY_ABBREVIATION[name]
        literal = f" (tzdata {TZDATA_VERSION}: an alias of {links[name]}, which keeps no daylight saving time)" if name in links else ""
        raise CronError(f"{quote(name)} is an abbreviation, not a zone{literal}; for the clocks people read there use {meant}")
    if name in links:
        target = links[name]
        raise CronError(
            f"{quote(name)} is an alias of {target} in tzdata {TZDATA_VERSION}; "
            f"Application Auto Scaling takes canonical names: use {target}"
        )
    if "/" not in name:
        raise CronError(f"{quote(name)} is not an IANA time zone name (e.g. Asia/Tokyo, America/New_York)")
    inside = sorted(zone for zone in zones if zone.startswith(f"{name}/"))
    hint = f" (a group of zones, not a zone: {', '.join(inside[:3])}, ...)" if inside else did_you_mean(name, zones)
    raise CronError(f"unknown IANA time zone {quote(name)}{hint} (not a canonical zone in tzdata {TZDATA_VERSION})")


@cache
def _load_zone(name: str) -> ZoneInfo:
    with resources.files("tzdata.zoneinfo").joinpath(*name.split("/")).open("rb") as handle:
        return ZoneInfo.from_file(handle, key=name)


@cache
def utc_offset_changes(zone: ZoneInfo, year: int) -> list[tuple[datetime, timedelta, timedelta]]:
    """Every UTC-offset change of `zone` in `year`: (instant in UTC, offset before, offset after)."""
    changes = []
    day = timedelta(days=1)
    moment = datetime(year, 1, 1, tzinfo=UTC) - day
    while moment.year <= year:
        following = moment + day
        before, after = moment.astimezone(zone).utcoffset(), following.astimezone(zone).utcoffset()
        if before != after:
            low, high = moment, following  # offset(low) == before, offset(high) == after
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                if middle.astimezone(zone).utcoffset() == before:
                    low = middle
                else:
                    high = middle
            if high.year == year:
                changes.append((high.replace(second=0, microsecond=0), before, after))
        moment = following
    return changes


class Cron:
    """A checked `cron(minutes hours day-of-month month day-of-week year)` expression."""

    def __init__(self, expression: str) -> None:
        match = CRON.match(expression.strip())
        if not match:
            raise CronError(
                f"must look like cron(minutes hours day-of-month month day-of-week year), got {quote(expression)}"
            )
        parts = match.group(1).split()
        if len(parts) != 6:
            raise CronError(
                f"needs six fields (minutes hours day-of-month month day-of-week year), got {len(parts)}: {quote(expression)}"
            )
        if (parts[2] == "?") == (parts[4] == "?"):
            raise CronError(f"exactly one of day-of-month and day-of-week must be '?', got {quote(expression)}")
        self.expression = expression
        try:
            self._vixie = " ".join(_vixie_field(text, index) for index, text in enumerate(parts[:5]))
            self._years = _years(parts[5])
        except CronError as error:
            raise CronError(f"{error} in {quote(expression)}") from None
        self._fields = croniter.expand(self._vixie)[0]

    @property
    def years(self) -> frozenset[int] | None:
        """The years the year field allows; None for every year."""
        return self._years

    def fires_at_wall_time(self, wall: datetime) -> bool:
        """Whether the fields match the naive local time `wall` (whether that time exists or not)."""
        minutes, hours, days, months, weekdays = self._fields
        weekday = (wall.weekday() + 1) % 7  # croniter: 0 = Sunday
        return (
            wall.minute in minutes
            and wall.hour in hours
            and ("*" in months or wall.month in months)
            and ("*" in days or wall.day in days)
            and ("*" in weekdays or weekday in weekdays or (weekday == 0 and 7 in weekdays))
            and (self._years is None or wall.year in self._years)
        )

    def next_firing(self, zone: ZoneInfo, after: datetime) -> datetime | None:
        """The first firing at or after `after`, searching the allowed years in order; None if none."""
        if self._years is None:
            return next(self.firings_between(zone, after, after + timedelta(days=4 * 366 + 1)), None)
        for year in sorted(y for y in self._years if y >= after.astimezone(zone).year):
            start = max(after, datetime(year, 1, 1, tzinfo=zone))
            moment = next(self.firings_between(zone, start, datetime(year + 1, 1, 1, tzinfo=zone)), None)
            if moment is not None:
                return moment
        return None

    def firings(self, zone: ZoneInfo, first_day: date, days: int) -> Iterator[datetime]:
        """Every firing on `days` local calendar days from `first_day`, as aware datetimes."""
        end_day = first_day + timedelta(days=days)
        return self.firings_between(
            zone, datetime.combine(first_day, time(), zone), datetime.combine(end_day, time(), zone)
        )

    def firings_between(self, zone: ZoneInfo, start: datetime, end: datetime) -> Iterator[datetime]:
        """Firings from `start` (inclusive) to `end` (exclusive), both aware in any zone; aware in `zone`, ascending.

        On the spring-forward night croniter moves a wall time that does not exist to the end of the gap:
        in New York 02:30 on 8 March 2026 fires at 03:00 EDT, and 02:00, 02:15, ... and 03:00 itself all
        collapse into that one 03:00 firing. We keep that rather than guess what AWS does in the gap.
        """
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError("start and end must be aware datetimes")
        first, stop = start.astimezone(UTC), end.astimezone(UTC)
        span_years = range(first.astimezone(zone).year, stop.astimezone(zone).year + 1)
        if self._years is not None and not any(year in self._years for year in span_years):
            return  # walking firings that the year field then drops would take as long as the span
        # croniter yields times strictly after the one it is given; compare instants in UTC, since two
        # datetimes sharing a ZoneInfo compare by wall time and ignore the fold.
        walk = croniter(self._vixie, (first - timedelta(seconds=1)).astimezone(zone))
        try:
            for moment in walk.all_next(datetime):
                instant = moment.astimezone(UTC)
                if instant >= stop:
                    return
                if instant >= first and not _repeated(moment) and (self._years is None or moment.year in self._years):
                    yield moment
        except CroniterBadDateError:  # never fires again, e.g. cron(0 0 31 2 ? *)
            return


def _repeated(moment: datetime) -> bool:
    """The second of a wall time that happens twice (01:30 EST after 01:30 EDT on the fall-back night).

    croniter yields both, with fold=1 on the second; only the first is kept: one firing per wall time.
    """
    return moment.utcoffset() != moment.replace(fold=0).utcoffset()


def _vixie_field(text: str, index: int) -> str:
    """Field `index` (0 = minutes ... 4 = day-of-week) as croniter reads it."""
    if text == "?" and index in (2, 4):
        return "*"  # the other day field decides; croniter reads '*' there as no constraint
    return ",".join(_vixie_item(item, index) for item in text.split(","))


def _vixie_item(item: str, index: int) -> str:
    """One comma-separated item; croniter checks its range."""
    name, low, high, names = FIELDS[index]
    match = ITEM.match(item)
    if not match or any(end and not end.isdigit() and end.upper() not in names for end in match.groups()[:2]):
        raise CronError(f"{name} value {quote(item)} {UNSUPPORTED}")
    first, last, step = match.groups()
    if first is None:
        return item
    if last is not None and _value(first, names) == _value(last, names):
        last = step = None  # croniter reads a range of one value, such as MON-MON, as the whole field
    ends = [first] if last is None else [first, last]
    if name == "day-of-week":
        if any(end.isdigit() and not low <= int(end) <= high for end in ends):
            raise CronError(f"{name} value {quote(item)} is outside {low}-{high}")
        ends = [str(int(end) - 1) if end.isdigit() else end for end in ends]  # AWS 1=SUN, croniter 0=SUN
    text = "-".join(ends) + (f"/{step}" if step else "")
    try:
        croniter.expand(" ".join(text if i == index else "*" for i in range(5)))
    except CroniterError:
        raise CronError(f"{name} value {quote(item)} is outside {low}-{high}") from None
    return text


def _value(text: str, names: dict[str, int]) -> int:
    return names[text.upper()] if text.upper() in names else int(text)


def _years(text: str) -> frozenset[int] | None:
    """The years the last field allows; None for '*'."""
    if text == "*":
        return None
    years: set[int] = set()
    for item in text.split(","):
        match = ITEM.match(item)
        if not match or not all(end is None or end.isdigit() for end in match.groups()[:2]):
            raise CronError(f"year value {quote(item)} {UNSUPPORTED}")
        first, last, step = match.groups()
        low = int(first) if first else YEARS[0]
        high = int(last) if last else YEARS[1] if step or not first else low
        if not (YEARS[0] <= low <= YEARS[1] and YEARS[0] <= high <= YEARS[1]):
            raise CronError(f"year value {quote(item)} is outside {YEARS[0]}-{YEARS[1]}")
        years.update(range(low, high + 1, int(step or 1)))
    return frozenset(years)
