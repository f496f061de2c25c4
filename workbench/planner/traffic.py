"""Per-minute request traffic for the whole endpoint, and recorded series as CSV.

`workbench.planner.reference_week` builds the reference week; `read_csv` reads a recorded one.

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
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

CSV_HEADER = ("timestamp", "requests")
MIN_MINUTES = 60
MAX_MINUTES = 31 * 24 * 60
ONE_MINUTE = timedelta(minutes=1)


class TrafficError(ValueError):
    """A traffic file that cannot be used; the message says where, what was found and what is allowed."""


@dataclass(frozen=True)
class TrafficEvent:
    """A release or spike, as minutes of the profile; `end_minute` is when its effect is over (exclusive)."""

    name: str  # e.g. "shonen-jump", "unannounced-viral-spike", "tokyo evening"
    kind: str  # "release" | "spike" | "peak"
    start_minute: int
    end_minute: int


@dataclass(frozen=True)
class TrafficProfile:
    """Requests per minute arriving at the whole endpoint, from `start` (minute 0) on."""

    name: str
    start: datetime
    requests_per_minute: tuple[float, ...]
    events: tuple[TrafficEvent, ...] = ()
    # When the users come for sure (kind "peak": audiences' evenings, releases): the windows a plan
    # judges shortfall in, whatever the config being judged schedules.
    peaks: tuple[TrafficEvent, ...] = ()
    zones: tuple[tuple[str, str], ...] = ()  # (audience, IANA time zone): the clocks a report shows
    source: str = ""  # the CSV file it was read from, as given (a command naming it works from the same place)

    def __post_init__(self) -> None:
        # A naive start would be read as the machine's local time somewhere downstream.
        if self.start.tzinfo is None or self.start.utcoffset() is None:
            raise TrafficError(f"{self.name}: start must be timezone-aware, got {self.start.isoformat()}")
        object.__setattr__(self, "start", self.start.astimezone(UTC))
        for name in ("requests_per_minute", "events", "peaks", "zones"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def time_at(self, minute: int) -> datetime:
        """UTC time at which `minute` starts."""
        return self.start + minute * ONE_MINUTE


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
    return TrafficProfile(path.name, start, tuple(series), source=str(path))


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
