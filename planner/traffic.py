"""Per-minute request traffic for the whole endpoint: the reference week, or a recorded CSV.

The reference week is built from `reference_week.yaml`: each audience adds requests per minute
by the hour of its own local clock (so the US peak follows New York's daylight-saving switch),
announced manga releases and unannounced spikes multiply the total, and seeded noise makes it
less regular without making it irreproducible.

CSV format (what `read_csv` accepts and `write_csv` writes):

    timestamp,requests
    2026-10-29T00:00:00+09:00,1412.5
    2026-10-29T00:01:00+09:00,1398

- the header is exactly `timestamp,requests`;
- `timestamp` is ISO-8601 with an offset or `Z`, on a whole minute; each row is exactly one
  minute after the previous one (no gaps, no duplicates, in order);
- `requests` is a non-negative finite number: requests arriving at the endpoint (all variants)
  in that minute;
- at least 60 rows, at most 31 days (44,640 rows). Blank lines are ignored.

Every problem raises TrafficError naming the file, the line, the field, the bad value and what is
allowed. `write_csv` writes UTC timestamps with `Z`, and numbers that read back exactly.
"""

from __future__ import annotations

import csv
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

REFERENCE_WEEK = Path(__file__).resolve().parent / "reference_week.yaml"
CSV_HEADER = ("timestamp", "requests")
MIN_MINUTES = 60
MAX_MINUTES = 31 * 24 * 60
WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
ONE_MINUTE = timedelta(minutes=1)


class TrafficError(ValueError):
    """A traffic file that cannot be used; the message says where, what was found and what is allowed."""


@dataclass(frozen=True)
class TrafficEvent:
    """A release or spike, as minutes of the profile; `end_minute` is when its effect is over (exclusive)."""

    name: str  # e.g. "shonen-jump", "unannounced-viral-spike"
    kind: str  # "release" | "spike"
    start_minute: int
    end_minute: int


@dataclass(frozen=True)
class TrafficProfile:
    """Requests per minute arriving at the whole endpoint, from `start` (minute 0) on."""

    name: str
    start: datetime
    requests_per_minute: tuple[float, ...]
    events: tuple[TrafficEvent, ...] = ()

    def __post_init__(self) -> None:
        # A naive start would be read as the machine's local time somewhere downstream.
        if self.start.tzinfo is None or self.start.utcoffset() is None:
            raise TrafficError(f"{self.name}: start must be timezone-aware, got {self.start.isoformat()}")
        object.__setattr__(self, "start", self.start.astimezone(UTC))
        object.__setattr__(self, "requests_per_minute", tuple(self.requests_per_minute))
        object.__setattr__(self, "events", tuple(self.events))

    def time_at(self, minute: int) -> datetime:
        """UTC time at which `minute` starts."""
        return self.start + minute * ONE_MINUTE


# --- the reference week --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Audience:
    name: str
    zone: ZoneInfo
    hourly: tuple[float, ...]  # requests/min at local hours 0..23


@dataclass(frozen=True)
class _Surge:
    """A multiplier on the total that rises, holds and falls back to 1 (a trapezoid in time)."""

    name: str
    kind: str
    start: datetime  # aware
    multiplier: float
    rise: int  # minutes
    hold: int
    fall: int

    @property
    def minutes(self) -> int:
        return self.rise + self.hold + self.fall


@dataclass(frozen=True)
class _Release:
    name: str
    weekdays: frozenset[int]  # date.weekday() numbers
    at: time
    zone: ZoneInfo
    multiplier: float
    ramp_minutes: int
    hours: float


@dataclass(frozen=True)
class _Week:
    start: datetime  # aware UTC
    days: int
    audiences: tuple[_Audience, ...]
    releases: tuple[_Release, ...]
    spikes: tuple[_Surge, ...]
    noise_seed: int
    noise_percent: float


def reference_week(path: Path = REFERENCE_WEEK) -> TrafficProfile:
    """Build the minute series the YAML describes. Same file, same series."""
    week = _parse_week(_Node.load(Path(path)))
    series = _audience_series(week)
    events = []
    for surge in _release_surges(week) + list(week.spikes):
        event = _apply_surge(series, week.start, surge)
        if event is not None:
            events.append(event)
    _add_noise(series, week.noise_seed, week.noise_percent)
    name = "reference week" if Path(path).resolve() == REFERENCE_WEEK else Path(path).name
    events.sort(key=lambda e: (e.start_minute, e.name))
    return TrafficProfile(name, week.start, tuple(series), tuple(events))


def _audience_series(week: _Week) -> list[float]:
    """Sum of the audiences, minute by minute; each converts the same UTC instant to its own clock."""
    minutes = week.days * 24 * 60
    return [sum(_audience_rate(a, week.start + i * ONE_MINUTE) for a in week.audiences) for i in range(minutes)]


def _apply_surge(series: list[float], start: datetime, surge: _Surge) -> TrafficEvent | None:
    """Multiply the minutes the surge covers; its event, clipped to the series, or None if it misses."""
    offset = _minutes_between(start, surge.start)
    for k in range(max(0, -offset), min(surge.minutes, len(series) - offset)):
        series[offset + k] *= 1 + (surge.multiplier - 1) * _trapezoid(k, surge.rise, surge.hold, surge.fall)
    if offset >= len(series) or offset + surge.minutes <= 0:
        return None
    return TrafficEvent(surge.name, surge.kind, max(0, offset), min(len(series), offset + surge.minutes))


def _audience_rate(audience: _Audience, when: datetime) -> float:
    """Requests/min of one audience at a UTC instant: linear between its local hour marks."""
    local = when.astimezone(audience.zone)
    here, following = audience.hourly[local.hour], audience.hourly[(local.hour + 1) % 24]
    return here + (following - here) * local.minute / 60


def _trapezoid(k: int, rise: int, hold: int, fall: int) -> float:
    """Shape 0..1 at minute k of a surge: 0 at its start, 1 after `rise`, back to 0 after `fall`."""
    if k < rise:
        return k / rise
    if k < rise + hold:
        return 1.0
    return (rise + hold + fall - k) / fall


def _release_surges(week: _Week) -> list[_Surge]:
    """Every occurrence of every release that touches the week, in the release's own time zone."""
    end = week.start + week.days * timedelta(days=1)
    surges = []
    for release in week.releases:
        for day in _local_dates(week.start, end, release.zone):
            if day.weekday() in release.weekdays:
                at = datetime.combine(day, release.at, tzinfo=release.zone)
                fall = round(release.hours * 60) - release.ramp_minutes
                surges.append(_Surge(release.name, "release", at, release.multiplier, release.ramp_minutes, 0, fall))
    return surges


def _local_dates(start: datetime, end: datetime, zone: ZoneInfo) -> Iterator[date]:
    """Local dates from the day before `start` (a surge may run past midnight) to the day of `end`."""
    day = start.astimezone(zone).date() - timedelta(days=1)
    while day <= end.astimezone(zone).date():
        yield day
        day += timedelta(days=1)


def _minutes_between(earlier: datetime, later: datetime) -> int:
    return round((later - earlier) / ONE_MINUTE)


def _add_noise(series: list[float], seed: int, percent: float) -> None:
    """Multiplicative, uniform +-percent; one draw per minute from a seeded generator, so repeatable."""
    rng = random.Random(seed)
    for i, value in enumerate(series):
        series[i] = value * (1 + rng.uniform(-percent, percent) / 100)


# --- reading reference_week.yaml -----------------------------------------------------------------


class _Node:
    """A YAML mapping that remembers where it is, so each error names the field, line and column."""

    def __init__(self, file: str, data: CommentedMap, path: str):
        self.file = file
        self.data = data
        self.path = path

    @classmethod
    def load(cls, path: Path) -> _Node:
        try:
            data = YAML(typ="rt").load(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise TrafficError(f"{path}: cannot read: {error.strerror}") from None
        except YAMLError as error:
            raise TrafficError(f"{path.name}: not valid YAML: {' '.join(str(error).split())}") from None
        if not isinstance(data, CommentedMap):
            raise TrafficError(f"{path.name}: must be a mapping with start, timezone, days, audiences, ...")
        return cls(path.name, data, "")

    def field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str | None, message: str, at_key: bool = False) -> TrafficError:
        """Points at the key's value (or the key itself, or the whole mapping when the key is missing)."""
        if key in self.data:
            line, column = self.data.lc.key(key) if at_key else self.data.lc.value(key)
        else:
            line, column = self.data.lc.line, self.data.lc.col
        name = self.field(key) if key else self.path or "(file)"
        return TrafficError(f"{self.file} line {line + 1}, column {column + 1}: {name}: {message}")

    def check_keys(self, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
        for key in self.data:
            if key not in required + optional:
                raise self.error(key, f"unknown setting; allowed: {', '.join(required + optional)}", at_key=True)
        for key in required:
            if key not in self.data:
                raise self.error(None, f"missing '{key}'; required: {', '.join(required)}")

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def child(self, key: str) -> _Node:
        value = self.data[key]
        if not isinstance(value, CommentedMap):
            raise self.error(key, f"must be a mapping, got {value!r}")
        return _Node(self.file, value, self.field(key))

    def children(self, key: str) -> list[_Node]:
        """Items of a list of mappings; each is named by its `name` so errors say which one."""
        items = self.data.get(key)
        if items is None:  # `releases:` left empty
            return []
        if not isinstance(items, CommentedSeq):
            raise self.error(key, f"must be a list of mappings, got {items!r}")
        nodes = []
        for i, item in enumerate(items):
            if not isinstance(item, CommentedMap):
                line, column = items.lc.item(i)
                raise TrafficError(f"{self.file} line {line + 1}, column {column + 1}: {key}[{i}]: must be a mapping")
            nodes.append(_Node(self.file, item, f"{self.field(key)}[{item.get('name', i)}]"))
        return nodes


def _parse_week(root: _Node) -> _Week:
    root.check_keys(("start", "timezone", "days", "audiences"), ("releases", "spikes", "noise"))
    zone = _zone(root, "timezone")
    start = _local_datetime(root, "start", zone)
    days = _integer(root, "days", 1, 31)
    week_end = start + timedelta(days=days)
    audiences = root.child("audiences")
    if not audiences.data:
        raise root.error("audiences", "must name at least one audience")
    noise = root.child("noise") if "noise" in root.data else None
    if noise is not None:
        noise.check_keys(("seed", "percent"))
    return _Week(
        start=start,
        days=days,
        audiences=tuple(_parse_audience(audiences.child(name), str(name)) for name in audiences.data),
        releases=tuple(_parse_release(node) for node in root.children("releases")),
        spikes=tuple(_parse_spike(node, start, week_end) for node in root.children("spikes")),
        noise_seed=_integer(noise, "seed", 0, 2**63) if noise is not None else 0,
        noise_percent=_number(noise, "percent", 0, 50) if noise is not None else 0.0,
    )


def _parse_audience(node: _Node, name: str) -> _Audience:
    node.check_keys(("timezone", "hourly"))
    hourly = node.get("hourly")
    if not isinstance(hourly, list) or len(hourly) != 24:
        got = f"{len(hourly)} values" if isinstance(hourly, list) else repr(hourly)
        raise node.error("hourly", f"must list 24 values (requests/min at local hours 0-23), got {got}")
    for i, value in enumerate(hourly):
        if not _is_number(value) or value < 0:
            raise node.error("hourly", f"hour {i} must be a non-negative number, got {value!r}")
    return _Audience(name, _zone(node, "timezone"), tuple(float(v) for v in hourly))


def _parse_release(node: _Node) -> _Release:
    node.check_keys(("name", "weekdays", "at", "timezone", "multiplier", "ramp_minutes", "hours"))
    hours = _number(node, "hours", 0, 24)
    ramp = _integer(node, "ramp_minutes", 0, 24 * 60)
    if ramp >= round(hours * 60):
        raise node.error("hours", f"must be longer than ramp_minutes ({ramp} min), got {hours:g}")
    return _Release(
        name=_text(node, "name"),
        weekdays=_weekdays(node, "weekdays"),
        at=_clock(node, "at"),
        zone=_zone(node, "timezone"),
        multiplier=_number(node, "multiplier", 1, 100),
        ramp_minutes=ramp,
        hours=hours,
    )


def _parse_spike(node: _Node, week_start: datetime, week_end: datetime) -> _Surge:
    node.check_keys(("name", "at", "timezone", "multiplier", "ramp_minutes", "hold_minutes", "decay_minutes"))
    at = _local_datetime(node, "at", _zone(node, "timezone"))
    if not week_start <= at < week_end:
        span = f"{week_start.isoformat()} to {week_end.isoformat()} (UTC)"
        raise node.error("at", f"{at.isoformat()} (UTC) is outside the week; must be from {span}")
    return _Surge(
        name=_text(node, "name"),
        kind="spike",
        start=at,
        multiplier=_number(node, "multiplier", 1, 100),
        rise=_integer(node, "ramp_minutes", 0, 24 * 60),
        hold=_integer(node, "hold_minutes", 0, 24 * 60),
        fall=_integer(node, "decay_minutes", 1, 24 * 60),
    )


def _is_number(value: Any) -> bool:
    # bool is an int in Python; `multiplier: yes` is a typo, not 1.
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(node: _Node, key: str, low: float, high: float) -> float:
    value = node.get(key)
    if not _is_number(value) or not low <= value <= high:
        raise node.error(key, f"must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _integer(node: _Node, key: str, low: int, high: int) -> int:
    value = node.get(key)
    if not _is_number(value) or not isinstance(value, int) or not low <= value <= high:
        raise node.error(key, f"must be a whole number from {low} to {high}, got {value!r}")
    return value


def _text(node: _Node, key: str) -> str:
    value = node.get(key)
    if not isinstance(value, str) or not value.strip():
        raise node.error(key, f"must be a non-empty text, got {value!r}")
    return value


def _zone(node: _Node, key: str) -> ZoneInfo:
    value = node.get(key)
    try:
        if isinstance(value, str):
            return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "Asia" is a directory of zones
        pass
    # Abbreviations such as JST or EST are not zones: they do not say when daylight saving applies.
    raise node.error(key, f"unknown time zone {value!r}; use an IANA name such as Asia/Tokyo or America/New_York")


def _local_datetime(node: _Node, key: str, zone: ZoneInfo) -> datetime:
    """A wall-clock time in `zone` (no offset: the zone decides it), returned in UTC."""
    value = node.get(key)
    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    except (TypeError, ValueError):
        parsed = None
    if parsed is None or parsed.tzinfo is not None:
        raise node.error(key, f"must be a local date and time such as 2026-10-29T00:00 (no offset), got {value!r}")
    return parsed.replace(tzinfo=zone).astimezone(UTC)


def _clock(node: _Node, key: str) -> time:
    value = node.get(key)
    match = re.fullmatch(r"([01]\d|2[0-3]):([0-5]\d)", value) if isinstance(value, str) else None
    if not match:
        raise node.error(key, f'must be a quoted local time "HH:MM" such as "18:00", got {value!r}')
    return time(int(match[1]), int(match[2]))


def _weekdays(node: _Node, key: str) -> frozenset[int]:
    values = node.get(key)
    if not isinstance(values, list) or not values:
        raise node.error(key, f"must be a list of weekdays from {', '.join(WEEKDAYS)}, got {values!r}")
    for value in values:
        if not isinstance(value, str) or value.upper() not in WEEKDAYS:
            raise node.error(key, f"unknown weekday {value!r}; allowed: {', '.join(WEEKDAYS)}")
    return frozenset(WEEKDAYS.index(v.upper()) for v in values)


# --- CSV -----------------------------------------------------------------------------------------


def read_csv(path: Path) -> TrafficProfile:
    """Read a recorded series; see the module docstring for the format."""
    path = Path(path)
    start: datetime | None = None
    previous: datetime | None = None
    series: list[float] = []
    for line, row in _csv_rows(path):
        when, requests = _parse_row(path, line, row)
        if previous is not None and when != previous + ONE_MINUTE:
            raise _csv_error(
                path, line, f"timestamp {row[0]} is not one minute after the previous row ({previous.isoformat()})"
            )
        if len(series) == MAX_MINUTES:
            raise _csv_error(path, line, f"too many rows: at most 31 days ({MAX_MINUTES} minutes) are allowed")
        start = start or when
        previous = when
        series.append(requests)
    if start is None or len(series) < MIN_MINUTES:
        raise TrafficError(f"{path.name}: {len(series)} data rows; at least {MIN_MINUTES} (one per minute) are needed")
    return TrafficProfile(path.name, start, tuple(series))


def write_csv(profile: TrafficProfile, path: Path) -> None:
    """Write in the format `read_csv` reads: UTC timestamps, floats written so they read back exactly."""
    with Path(path).open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        for minute, requests in enumerate(profile.requests_per_minute):
            writer.writerow((profile.time_at(minute).strftime("%Y-%m-%dT%H:%M:%SZ"), repr(float(requests))))


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Data rows with their line numbers, after checking the header; blank lines skipped."""
    try:
        # utf-8-sig: spreadsheets often save a byte-order mark before the header.
        with path.open(newline="", encoding="utf-8-sig") as file:
            reader = csv.reader(file)
            header = next(reader, None)
            if header is None:
                raise TrafficError(f"{path.name}: file is empty; expected the header '{','.join(CSV_HEADER)}'")
            if tuple(cell.strip() for cell in header) != CSV_HEADER:
                got = ",".join(header)
                raise _csv_error(path, reader.line_num, f"header must be '{','.join(CSV_HEADER)}', got '{got}'")
            for row in reader:
                if any(cell.strip() for cell in row):
                    yield reader.line_num, row
    except OSError as error:
        raise TrafficError(f"{path}: cannot read: {error.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as error:
        raise TrafficError(f"{path.name}: not a readable CSV file: {error}") from None


def _parse_row(path: Path, line: int, row: list[str]) -> tuple[datetime, float]:
    if len(row) != 2:
        raise _csv_error(path, line, f"expected 2 fields (timestamp,requests), got {len(row)}: {','.join(row)!r}")
    return _parse_timestamp(path, line, row[0].strip()), _parse_requests(path, line, row[1].strip())


def _parse_timestamp(path: Path, line: int, text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise _csv_error(
            path, line, f"timestamp must be ISO-8601 with an offset or Z (e.g. 2026-10-29T00:00:00+09:00), got '{text}'"
        )
    if when.second or when.microsecond:
        raise _csv_error(path, line, f"timestamp must be on a whole minute (seconds 00), got '{text}'")
    return when.astimezone(UTC)


def _parse_requests(path: Path, line: int, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise _csv_error(path, line, f"requests must be a non-negative number, got '{text}'")
    return value


def _csv_error(path: Path, line: int, message: str) -> TrafficError:
    return TrafficError(f"{path.name} line {line}: {message}")
