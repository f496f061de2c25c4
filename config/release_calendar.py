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
from typing import Annotated, Any, Literal, get_args
from zoneinfo import ZoneInfo

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from config.schedules import CronError, time_zone

Weekday = Literal["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
WEEKDAYS: tuple[Weekday, ...] = get_args(Weekday)  # in date.weekday() order
CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
NAME = r"^[a-z0-9][a-z0-9-]{0,40}$"
CLOCK_TEXT = 'must be a quoted local time "HH:MM" such as "18:00"'
ZONE_TEXT = "must be an IANA time zone name such as Asia/Tokyo"


class Strict(BaseModel):
    # As config.schema.Strict, which imports this module for EnvironmentConfig.release_calendar.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def invalid(message: str) -> PydanticCustomError:
    """A validation error whose message is `message` as written (also the planner's reference week's)."""
    # The message as context, not as the template: a quoted value may contain braces.
    return PydanticCustomError("invalid", "{reason}", {"reason": message})


def _text(what: str) -> Any:
    """A before-validator: a value that is not text (an unquoted YAML number) gets `what`, not pydantic's
    "Input should be a valid string"."""

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            raise invalid(what)
        return value

    return BeforeValidator(check)


def _zone(name: str) -> str:
    try:
        time_zone(name)  # refuses abbreviations (JST) and aliases (US/Eastern)
    except CronError as error:
        raise invalid(str(error)) from None
    return name


def _clock(value: str) -> str:
    if not CLOCK.match(value):
        raise invalid(CLOCK_TEXT)
    return value


# Both kept as text (the file's own words); `time_zone()` and `clock_time()` turn them into values.
Zone = Annotated[str, Field(max_length=100), _text(ZONE_TEXT), AfterValidator(_zone)]
Clock = Annotated[str, _text(CLOCK_TEXT), AfterValidator(_clock)]


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
            raise invalid("must differ from start")
        return end

    def on(self, day: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
        """The window that opens on `day` in `zone`: (start, end), aware; the end on the next day when the
        window runs past midnight."""
        start_at, end_at = clock_time(self.start), clock_time(self.end)
        start = datetime.combine(day, start_at, tzinfo=zone)
        return start, datetime.combine(day + timedelta(days=1 if end_at <= start_at else 0), end_at, tzinfo=zone)


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
        for day in local_dates(first, end, zone):
            windows.append(PeakWindow(f"{name} evening", *audience.evening.on(day, zone)))
    for release in calendar.releases:
        zone = time_zone(release.timezone)
        for day in local_dates(first, end, zone):
            if WEEKDAYS[day.weekday()] in release.weekdays:
                start = datetime.combine(day, clock_time(release.at), tzinfo=zone)
                windows.append(PeakWindow(release.name, start, start + timedelta(minutes=round(release.hours * 60))))
    return windows


def local_dates(first: datetime, end: datetime, zone: ZoneInfo) -> Iterator[date]:
    """Local dates in `zone` from the day before `first` (a window may run past midnight) to the day of `end`."""
    day = first.astimezone(zone).date() - timedelta(days=1)
    while day <= end.astimezone(zone).date():
        yield day
        day += timedelta(days=1)
