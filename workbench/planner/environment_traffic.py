"""The traffic an environment is planned for (`planning.traffic`): a profile, scaled, named in the report.

Every environment states its own: prod replays the reference week, smaller environments a stated
fraction of it or a recorded week of their own (`bin/ops traffic ENV --out week.csv`). A profile brings
counts; the windows its shortfall is judged in come from the environment's own `release_calendar`
(`traffic_of`), whatever the profile: the reference week and a recorded week are judged by the same rules,
and neither by the schedules being judged. `traffic_for` and `recorded` alone keep the reference week's
audiences and releases (`with_calendar`), for callers that have no environment.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

from config.domain.release_calendar import ReleaseCalendar, peak_windows
from config.schema import EnvironmentConfig, PlanTraffic
from workbench.planner.reference_week import REFERENCE_WEEK, reference_week, with_calendar
from workbench.planner.traffic import ONE_MINUTE, TrafficError, TrafficEvent, TrafficProfile, read_csv

ROOT = Path(__file__).resolve().parents[2]


def traffic_of(cfg: EnvironmentConfig, path: Path | None = None, root: Path = ROOT) -> TrafficProfile:
    """What `make plan ENV` replays: `path` (TRAFFIC=, the environment's own counts, not scaled) or
    `planning.traffic`, with its peak windows and clocks from `release_calendar`."""
    profile = recorded(path) if path else traffic_for(cfg.planning.traffic, root)
    return with_release_calendar(profile, cfg.release_calendar)


def traffic_for(setting: PlanTraffic, root: Path = ROOT) -> TrafficProfile:
    """Read `setting.profile` (relative to `root`) and scale it; TrafficError names the field on failure."""
    path = root / setting.profile if setting.profile else REFERENCE_WEEK
    try:
        profile = with_calendar(read_csv(path)) if path.suffix == ".csv" else reference_week(path)
    except TrafficError as error:
        raise TrafficError(f"planning.traffic.profile '{setting.profile}': {error}") from None
    return scaled(profile, setting.scale)


def recorded(path: Path) -> TrafficProfile:
    """A CSV given on the command line (`--traffic`): the environment's own counts, not scaled."""
    return with_calendar(read_csv(path))


def scaled(profile: TrafficProfile, factor: float) -> TrafficProfile:
    if factor == 1:
        return profile
    counts = tuple(requests * factor for requests in profile.requests_per_minute)
    return replace(profile, name=f"{profile.name} × {factor:g}", requests_per_minute=counts)


def with_release_calendar(profile: TrafficProfile, calendar: ReleaseCalendar) -> TrafficProfile:
    """`profile` with the calendar's windows as its peaks (clipped to its minutes) and its audiences' clocks."""
    minutes = len(profile.requests_per_minute)
    peaks = calendar_peaks(calendar, profile.start, minutes)
    zones = tuple((name, audience.timezone) for name, audience in calendar.audiences.items())
    return replace(profile, peaks=peaks, zones=zones)


def calendar_peaks(calendar: ReleaseCalendar, first: datetime, minutes: int) -> tuple[TrafficEvent, ...]:
    """The calendar's windows as minutes from `first`, clipped to `minutes`, by start then name."""
    peaks = []
    for window in peak_windows(calendar, first, first + minutes * ONE_MINUTE):
        begin, finish = round((window.start - first) / ONE_MINUTE), round((window.end - first) / ONE_MINUTE)
        if finish > 0 and begin < minutes:
            peaks.append(TrafficEvent(window.name, "peak", max(0, begin), min(minutes, finish)))
    return tuple(sorted(peaks, key=lambda p: (p.start_minute, p.name)))
