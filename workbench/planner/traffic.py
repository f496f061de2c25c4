"""Per-minute request traffic for the whole endpoint, and recorded series as CSV.

`workbench.planner.reference_week` builds the reference week; `read_csv` reads a recorded one. The CSV
format is the product's (ops/operations/traffic_csv.py: `timestamp,requests`, one row a minute), which
`bin/ops traffic` writes: one definition, read and written here through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ops.operations.traffic_csv import CSV_HEADER, ONE_MINUTE, TrafficCsvError, read_series, write_series

__all__ = ["CSV_HEADER", "ONE_MINUTE", "TrafficError", "TrafficEvent", "TrafficProfile", "read_csv", "write_csv"]


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
    """Read a recorded series (ops/operations/traffic_csv.py says the format); its problems as TrafficError."""
    path = Path(path)
    try:
        start, series = read_series(path)
    except TrafficCsvError as error:
        raise TrafficError(str(error)) from None
    return TrafficProfile(path.name, start, series, source=str(path))


def write_csv(profile: TrafficProfile, path: Path) -> None:
    """Write in the format `read_csv` reads: UTC timestamps, floats written so they read back exactly."""
    write_series(path, profile.start, profile.requests_per_minute)
