"""The environment's release calendar (`release_calendar:`): when its users come for sure, in their own
clocks. Each audience's evening, every day, and each announced release, on its weekdays, for `hours`.

`make plan` judges shortfall inside these windows against `planning.budget.shortfall_minutes_in_peaks`,
whatever traffic it replays (the reference week or a week recorded with `bin/ops traffic`) and whatever
the autoscaling schedules being judged say: a config cannot pass by scheduling fewer windows, and a
recorded week is judged by the same rules as the reference week (workbench/planner/environment_traffic.py).
Times are local to an IANA time zone (config.schedules.time_zone: canonical names from the pinned
tzdata), so an evening in New York moves in UTC when daylight saving does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from config.schedules import CronError, time_zone

Weekday = Literal["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
WEEKDAYS: tuple[str, ...] = get_args(Weekday)  # in date.weekday() order
CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
NAME = r"^[a-z0-9][a-z0-9-]{0,40}$"


class Strict(BaseModel):
    # As config.schema.Strict, which imports this module for EnvironmentConfig.release_calendar.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _invalid(message: str) -> PydanticCustomError:
    # The message as context, not as the template: a quoted value may contain braces.
    return PydanticCustomError("invalid", "{reason}", {"reason": message})


def _zone(name: str) -> str:
    try:
        time_zone(name)  # refuses abbreviations (JST) and aliases (US/Eastern)
    except CronError as error:
        raise _invalid(str(error)) from None
    return name


def _clock(value: str) -> str:
    if not CLOCK.match(value):
        raise _invalid('must be a quoted local time "HH:MM" such as "18:00"')
    return value


Zone = Annotated[str, Field(max_length=100), AfterValidator(_zone)]
Clock = Annotated[str, AfterValidator(_clock)]


def clock_time(value: str) -> time:
    hours, minutes = value.split(":")
    return time(int(hours), int(minutes))


class LocalWindow(Strict):
    """A daily window in the audience's clock; an `end` before `start` runs past midnight."""

    start: Clock
    end: Clock

    @field_validator("end")
    @classmethod
    def _not_empty(cls, end: str, info: ValidationInfo) -> str:
        if end == info.data.get("start"):
            raise _invalid("must differ from start")
        return end


class CalendarAudience(Strict):
    timezone: Zone
    evening: LocalWindow  # every day: the plan expects no queue inside it


class CalendarRelease(Strict):
    """An announced release: from `at` on each of `weekdays`, local time, for `hours`."""

    name: str = Field(pattern=NAME)
    weekdays: list[Weekday] = Field(min_length=1, max_length=7)
    at: Clock
    timezone: Zone
    hours: float = Field(gt=0, le=24)


class ReleaseCalendar(Strict):
    audiences: dict[Annotated[str, Field(pattern=NAME)], CalendarAudience] = Field(min_length=1, max_length=20)
    releases: list[CalendarRelease] = Field(default_factory=list, max_length=50)


@dataclass(frozen=True)
class PeakWindow:
    name: str  # "tokyo evening", or the release's name
    start: datetime  # aware
    end: datetime  # exclusive


def peak_windows(calendar: ReleaseCalendar, first: datetime, end: datetime) -> list[PeakWindow]:
    """Every audience evening and release occurrence that may touch first..end (not clipped): local dates
    from the day before `first` (a window may run past midnight) to the day of `end`, in each zone."""
    windows = []
    for name, audience in calendar.audiences.items():
        zone = time_zone(audience.timezone)
        start_at, end_at = clock_time(audience.evening.start), clock_time(audience.evening.end)
        for day in _local_dates(first, end, audience.timezone):
            start = datetime.combine(day, start_at, tzinfo=zone)
            stop = datetime.combine(day + timedelta(days=1 if end_at <= start_at else 0), end_at, tzinfo=zone)
            windows.append(PeakWindow(f"{name} evening", start, stop))
    for release in calendar.releases:
        zone = time_zone(release.timezone)
        for day in _local_dates(first, end, release.timezone):
            if WEEKDAYS[day.weekday()] in release.weekdays:
                start = datetime.combine(day, clock_time(release.at), tzinfo=zone)
                windows.append(PeakWindow(release.name, start, start + timedelta(minutes=round(release.hours * 60))))
    return windows


def _local_dates(first: datetime, end: datetime, zone_name: str) -> Iterator[date]:
    zone = time_zone(zone_name)
    day = first.astimezone(zone).date() - timedelta(days=1)
    while day <= end.astimezone(zone).date():
        yield day
        day += timedelta(days=1)
