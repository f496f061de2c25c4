"""The traffic CSV `bin/ops traffic` writes and the planner replays (`make plan ENV=… TRAFFIC=FILE.csv`).

    timestamp,requests
    2026-10-29T00:00:00+09:00,1412.5

The header exactly; ISO-8601 timestamps with an offset or Z, on whole minutes, each one minute after the last;
requests a non-negative finite number (all variants); 60 rows to 31 days; blank lines ignored. Every problem
raises TrafficCsvError naming the file, the line and what is allowed.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

CSV_HEADER = ("timestamp", "requests")
MIN_MINUTES = 60
MAX_MINUTES = 31 * 24 * 60
ONE_MINUTE = timedelta(minutes=1)


class TrafficCsvError(ValueError):
    """A traffic file that cannot be used; the message says where, what was found and what is allowed."""


def read_series(path: Path) -> tuple[datetime, tuple[float, ...]]:
    """The first minute (UTC) and the requests of each minute from there; see the module docstring."""
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
        raise TrafficCsvError(
            f"{path.name}: {len(series)} data rows; at least {MIN_MINUTES} (one per minute) are needed"
        )
    return start, tuple(series)


def write_series(path: Path, start: datetime, requests_per_minute: Iterable[float]) -> None:
    """The format `read_series` reads: UTC minutes from `start`, floats that read back exactly."""
    first = start.astimezone(UTC)
    with Path(path).open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        for minute, requests in enumerate(requests_per_minute):
            when = first + minute * ONE_MINUTE
            writer.writerow((when.strftime("%Y-%m-%dT%H:%M:%SZ"), repr(float(requests))))


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    try:
        # utf-8-sig: spreadsheets often save a byte-order mark before the header.
        with path.open(newline="", encoding="utf-8-sig") as file:
            reader = csv.reader(file)
            header = next(reader, None)
            if header is None:
                raise TrafficCsvError(f"{path.name}: file is empty; expected the header '{','.join(CSV_HEADER)}'")
            if tuple(cell.strip() for cell in header) != CSV_HEADER:
                got = ",".join(header)
                raise _csv_error(path, reader.line_num, f"header must be '{','.join(CSV_HEADER)}', got '{got}'")
            for row in reader:
                if any(cell.strip() for cell in row):
                    yield reader.line_num, row
    except OSError as error:
        raise TrafficCsvError(f"{path}: cannot read: {error.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as error:
        raise TrafficCsvError(f"{path.name}: not a readable CSV file: {error}") from None


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


def _csv_error(path: Path, line: int, message: str) -> TrafficCsvError:
    return TrafficCsvError(f"{path.name} line {line}: {message}")
