"""The reference week the planner replays, built from `reference_week.yaml`.

Each audience adds requests per minute by the hour of its own local clock (so the US peak follows
New York's daylight-saving switch), announced manga releases and unannounced spikes multiply the
total, and seeded noise makes it less regular without making it irreproducible.

The YAML is checked by the pydantic models below; every problem is reported at once, one line
each: `<file>: <field path>: <message>, got <value>`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import AfterValidator, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from config.loader import describe_error
from config.release_calendar import WEEKDAYS, Clock, LocalWindow, Weekday, Zone, clock_time, invalid, local_dates
from config.schedules import time_zone
from config.schema import Strict
from workbench.planner.traffic import ONE_MINUTE, TrafficError, TrafficEvent, TrafficProfile

REFERENCE_WEEK = Path(__file__).resolve().parent / "reference_week.yaml"


def _without_offset(value: datetime) -> datetime:
    # The zone decides the offset; a fixed one would be wrong on one side of a daylight-saving switch.
    if value.tzinfo is not None:
        raise invalid("must be a local date and time such as 2026-10-29T00:00, without an offset")
    return value


# Not strict: YAML reads 2026-10-29T00:00 (no seconds) as text, which pydantic parses.
LocalDateTime = Annotated[datetime, Field(strict=False), AfterValidator(_without_offset)]
Minutes = Annotated[int, Field(ge=0, le=24 * 60)]
Multiplier = Annotated[float, Field(ge=1, le=100)]


class _Model(Strict):
    # Strict types: YAML already gives numbers, so a quoted "5" or a `true` is a typo, not a value.
    model_config = ConfigDict(strict=True)


class Audience(_Model):
    timezone: Zone
    hourly: list[Annotated[float, Field(ge=0)]] = Field(min_length=24, max_length=24)  # req/min at hours 0..23
    peak: LocalWindow  # a peak window every day: the plan expects no shortfall there (config's model)


class Release(_Model):
    """Announced: from `at` local time, the total rises over `ramp_minutes` and is back to 1x after `hours`."""

    name: str = Field(min_length=1)
    weekdays: list[Weekday] = Field(min_length=1)
    at: Clock
    timezone: Zone
    multiplier: Multiplier
    ramp_minutes: Minutes  # before `hours`, so its validator can see it
    hours: float = Field(gt=0, le=24)

    @field_validator("hours")
    @classmethod
    def _longer_than_the_ramp(cls, hours: float, info: ValidationInfo) -> float:
        ramp = info.data.get("ramp_minutes")
        if ramp is not None and round(hours * 60) <= ramp:
            raise invalid(f"must be longer than ramp_minutes ({ramp} min)")
        return hours


class Spike(_Model):
    """Unannounced: the total rises over `ramp_minutes`, holds, then decays back to 1x."""

    name: str = Field(min_length=1)
    at: LocalDateTime
    timezone: Zone
    multiplier: Multiplier
    ramp_minutes: Minutes
    hold_minutes: Minutes
    decay_minutes: int = Field(ge=1, le=24 * 60)

    @property
    def start(self) -> datetime:
        return self.at.replace(tzinfo=time_zone(self.timezone)).astimezone(UTC)


class Noise(_Model):
    seed: int = Field(ge=0, le=2**63)
    percent: float = Field(ge=0, le=50)  # uniform +-percent, multiplied into each minute


class Week(_Model):
    start: LocalDateTime
    timezone: Zone
    days: int = Field(ge=1, le=31)
    audiences: dict[str, Audience] = Field(min_length=1)
    releases: list[Release] = []
    spikes: list[Spike] = []
    noise: Noise = Noise(seed=0, percent=0)

    @property
    def first_minute(self) -> datetime:
        return self.start.replace(tzinfo=time_zone(self.timezone)).astimezone(UTC)

    @property
    def end(self) -> datetime:
        return self.first_minute + timedelta(days=self.days)


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


def reference_week(path: Path = REFERENCE_WEEK) -> TrafficProfile:
    """Build the minute series the YAML describes. Same file, same series."""
    path = Path(path)
    name = "reference week" if path.resolve() == REFERENCE_WEEK else path.name
    return _built(path, name, _read_text(path))


# A profile is immutable (frozen, tuples) and a pure function of the file's text, and building it takes
# ~70 ms of CPU: a process that plans, tunes or reviews several times builds each text once.
@lru_cache(maxsize=8)
def _built(path: Path, name: str, text: str) -> TrafficProfile:
    week = _load(path, text)
    series = _audience_series(week)
    events = []
    surges = _release_surges(week, week.first_minute, week.end) + [_spike_surge(spike) for spike in week.spikes]
    for surge in surges:
        event = _apply_surge(series, week.first_minute, surge)
        if event is not None:
            events.append(event)
    _add_noise(series, week.noise.seed, week.noise.percent)
    events.sort(key=lambda e: (e.start_minute, e.name))
    peaks = _peaks(week, week.first_minute, len(series))
    return TrafficProfile(name, week.first_minute, tuple(series), tuple(events), peaks, _zones(week))


def with_calendar(profile: TrafficProfile, path: Path = REFERENCE_WEEK) -> TrafficProfile:
    """A recorded series with the peak windows and clocks of `path`'s audiences and releases.

    A CSV holds counts, not a calendar; the service's audiences and release days are the same.
    """
    week = _load(Path(path))
    peaks = _peaks(week, profile.start, len(profile.requests_per_minute))
    return replace(profile, peaks=peaks, zones=_zones(week))


def _zones(week: Week) -> tuple[tuple[str, str], ...]:
    return tuple((name, audience.timezone) for name, audience in week.audiences.items())


def _peaks(week: Week, first: datetime, minutes: int) -> tuple[TrafficEvent, ...]:
    """Each audience's daily peak and each release, from `first` for `minutes`, clipped to that span."""
    end = first + minutes * ONE_MINUTE
    windows = []
    for name, audience in week.audiences.items():
        zone = time_zone(audience.timezone)
        for day in local_dates(first, end, zone):
            windows.append((f"{name} evening", *audience.peak.on(day, zone)))
    for surge in _release_surges(week, first, end):
        windows.append((surge.name, surge.start, surge.start + surge.minutes * ONE_MINUTE))
    peaks = []
    for name, start, stop in windows:
        begin, finish = round((start - first) / ONE_MINUTE), round((stop - first) / ONE_MINUTE)
        if finish > 0 and begin < minutes:
            peaks.append(TrafficEvent(name, "peak", max(0, begin), min(minutes, finish)))
    return tuple(sorted(peaks, key=lambda p: (p.start_minute, p.name)))


def _load(path: Path, text: str | None = None) -> Week:
    raw = _parse_yaml(path, _read_text(path) if text is None else text)
    try:
        week = Week.model_validate(raw)
    except ValidationError as error:
        errors = error.errors()
    else:
        errors = _spikes_outside(week, raw)
    if errors:
        lines = [f"{path.name}: {field}: {message}" for field, message in (describe_error(e, raw) for e in errors)]
        raise TrafficError("\n".join(lines))
    return week


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise TrafficError(f"{path}: cannot read: {error.strerror}") from None


def _parse_yaml(path: Path, text: str) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as error:
        raise TrafficError(f"{path.name}: not valid YAML: {' '.join(str(error).split())}") from None


def _spikes_outside(week: Week, raw: dict) -> list[dict]:
    """Spikes that miss the week, as pydantic errors; checked after the models since it needs the week's span."""
    zone = time_zone(week.timezone)
    first, end = (moment.astimezone(zone).isoformat() for moment in (week.first_minute, week.end))
    message = f"must fall inside the week, from {first} up to {end}"
    return [
        {"loc": ("spikes", i, "at"), "msg": message, "type": "outside_week", "input": raw["spikes"][i]["at"]}
        for i, spike in enumerate(week.spikes)
        if not week.first_minute <= spike.start < week.end
    ]


def _spike_surge(spike: Spike) -> _Surge:
    return _Surge(
        spike.name, "spike", spike.start, spike.multiplier, spike.ramp_minutes, spike.hold_minutes, spike.decay_minutes
    )


def _release_surges(week: Week, first: datetime, end: datetime) -> list[_Surge]:
    """Every occurrence of every release that touches first..end, in the release's own time zone."""
    surges = []
    for release in week.releases:
        zone = time_zone(release.timezone)
        for day in local_dates(first, end, zone):
            if WEEKDAYS[day.weekday()] in release.weekdays:
                at = datetime.combine(day, clock_time(release.at), tzinfo=zone)
                fall = round(release.hours * 60) - release.ramp_minutes
                surges.append(_Surge(release.name, "release", at, release.multiplier, release.ramp_minutes, 0, fall))
    return surges


def _audience_series(week: Week) -> list[float]:
    """Sum of the audiences, minute by minute; each converts the same UTC instant to its own clock."""
    audiences = [(a, time_zone(a.timezone)) for a in week.audiences.values()]
    minutes = week.days * 24 * 60
    return [
        sum(_audience_rate(a, zone, week.first_minute + i * ONE_MINUTE) for a, zone in audiences)
        for i in range(minutes)
    ]


def _audience_rate(audience: Audience, zone: ZoneInfo, when: datetime) -> float:
    """Requests/min of one audience at a UTC instant: linear between its local hour marks."""
    local = when.astimezone(zone)
    here, following = audience.hourly[local.hour], audience.hourly[(local.hour + 1) % 24]
    return here + (following - here) * local.minute / 60


def _apply_surge(series: list[float], start: datetime, surge: _Surge) -> TrafficEvent | None:
    """Multiply the minutes the surge covers; its event, clipped to the series, or None if it misses."""
    offset = round((surge.start - start) / ONE_MINUTE)
    for k in range(max(0, -offset), min(surge.minutes, len(series) - offset)):
        series[offset + k] *= 1 + (surge.multiplier - 1) * _trapezoid(k, surge.rise, surge.hold, surge.fall)
    if offset >= len(series) or offset + surge.minutes <= 0:
        return None
    return TrafficEvent(surge.name, surge.kind, max(0, offset), min(len(series), offset + surge.minutes))


def _trapezoid(k: int, rise: int, hold: int, fall: int) -> float:
    """Shape 0..1 at minute k of a surge: 0 at its start, 1 after `rise`, back to 0 after `fall`."""
    if k < rise:
        return k / rise
    if k < rise + hold:
        return 1.0
    return (rise + hold + fall - k) / fall


def _add_noise(series: list[float], seed: int, percent: float) -> None:
    """Multiplicative, uniform +-percent; one draw per minute from a seeded generator, so repeatable."""
    rng = random.Random(seed)
    for i, value in enumerate(series):
        series[i] = value * (1 + rng.uniform(-percent, percent) / 100)
