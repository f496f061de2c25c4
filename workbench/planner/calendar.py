"""Scheduled actions of one variant, placed on the minutes of a traffic profile.

Each window raises (or caps) the capacity range at `start` and restores the target's own range at
`end`, in the window's IANA time zone: a week that crosses a DST switch moves the UTC minute.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta

from config.schedules import Cron, time_zone
from config.schema import ScheduledWindow, VariantScaling

LOOKBACK = timedelta(days=8)  # finds the window already open at minute 0


@dataclass(frozen=True)
class ScheduledAction:
    minute: int  # may be negative: fired before the run started
    window: str
    edge: str  # "start" | "end"
    min_capacity: int
    max_capacity: int
    raises_floor: bool  # the window is a peak: it lifts min_capacity above the target's


def scheduled_actions(scaling: VariantScaling, start: datetime, minutes: int) -> list[ScheduledAction]:
    """Every firing from LOOKBACK before `start` to the end of the run, in time order."""
    actions = [
        action
        for window in scaling.schedules
        for action in _window_actions(window, scaling.min_capacity, scaling.max_capacity, start, minutes)
    ]
    return sorted(actions, key=lambda a: (a.minute, a.edge == "start"))


@functools.lru_cache(maxsize=256)
def _window_actions(
    window: ScheduledWindow, min_capacity: int, max_capacity: int, start: datetime, minutes: int
) -> tuple[ScheduledAction, ...]:
    """One window's firings (cached: a plan and a search place the same windows on the same week many times)."""
    end = start + timedelta(minutes=minutes)
    zone = time_zone(window.timezone)
    peak = window.min_capacity > min_capacity
    edges = (
        ("start", window.start, window.min_capacity, window.max_capacity or max_capacity),
        ("end", window.end, min_capacity, max_capacity),
    )
    actions = []
    for edge, expression, low, high in edges:
        for fired in Cron(expression).firings_between(zone, start - LOOKBACK, end):
            minute = int((fired - start).total_seconds() // 60)
            actions.append(ScheduledAction(minute, window.name, edge, low, high, peak))
    return tuple(actions)


def peak_minutes(actions: list[ScheduledAction], minutes: int) -> list[bool]:
    """True where a window that lifts the floor is open (started and not yet ended)."""
    mask, open_peaks = [], set()
    pending = iter(actions)
    upcoming = next(pending, None)
    for minute in range(minutes):
        while upcoming is not None and upcoming.minute <= minute:
            if upcoming.raises_floor:
                (open_peaks.add if upcoming.edge == "start" else open_peaks.discard)(upcoming.window)
            upcoming = next(pending, None)
        mask.append(bool(open_peaks))
    return mask
