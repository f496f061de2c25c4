"""The traffic an environment is planned for (`planning.traffic`): a profile, scaled, named in the report.

Every environment states its own: prod replays the reference week, smaller environments a stated
fraction of it or a recorded week of their own. A CSV brings counts only; its peak windows and clocks
come from the reference week's audiences and release calendar (see `with_calendar`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from config.schema import PlanTraffic
from planner.reference_week import reference_week, with_calendar
from planner.traffic import TrafficError, TrafficProfile, read_csv

ROOT = Path(__file__).resolve().parents[1]


def traffic_for(setting: PlanTraffic, root: Path = ROOT) -> TrafficProfile:
    """Read `setting.profile` (relative to `root`) and scale it; TrafficError names the field on failure."""
    path = root / setting.profile
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
