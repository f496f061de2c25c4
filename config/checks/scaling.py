"""Autoscaling rules: capacities, engine step scaling, and a simulated timeline of the schedules."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from itertools import islice
from zoneinfo import ZoneInfo

from config.metric_names import HIGH_RESOLUTION
from config.problems import Problem, field_path, quote, refuse, variant_path
from config.scaling_target import saturating_capacity
from config.schedules import Cron, CronError, time_zone, utc_offset_changes
from config.schema import EngineStepScaling, EnvironmentConfig, ScheduledWindow, VariantScaling
from config.sections import is_none, skip_invalid
from container.serving import contract

__all__ = ["Problem", "check_autoscaling"]

# Two fortnights, one in winter and one in summer: US-Eastern peaks move against Tokyo with DST.
# A window that fires in neither (a December sale, a one-off date) gets a fortnight of its own from
# its first firing on or after FIRST_DAY, and every window is simulated there too.
SIMULATION_STARTS = (date(2027, 1, 4), date(2027, 7, 5))
SIMULATION_DAYS = 14
FIRST_DAY = date(2026, 1, 1)
# SageMaker applies one capacity change at a time and an instance takes minutes to come into service
# (planning.provisioning_minutes): a window that starts more often than hourly cannot take effect.
MAX_STARTS_PER_DAY = 24
# DST: the offset changes of every year a schedule may fire in are checked; for a schedule without a
# year field, twelve years bring every weekday on which a rule like "second Sunday of March" can fall.
DST_YEARS = range(2026, 2038)


def check_autoscaling(cfg: EnvironmentConfig) -> list[Problem]:
    return [problem for name in cfg.autoscaling for problem in skip_invalid(_check_variant_scaling, cfg, name)]


def _check_variant_scaling(cfg: EnvironmentConfig, name: str) -> list[Problem]:
    scaling, path = cfg.autoscaling[name], field_path("autoscaling", name)
    names = [v.name for v in cfg.variants]
    if name not in names:
        return [(path, f"no variant named {quote(name)}; variants: {', '.join(names)}")]
    return [
        *skip_invalid(_check_range, cfg, name, path, scaling),
        *skip_invalid(_check_tracking, cfg, name, f"{path}.target_tracking"),
        *skip_invalid(_check_step_scaling, path, scaling),
        *skip_invalid(_check_schedules, path, scaling),
    ]


def _check_range(cfg: EnvironmentConfig, name: str, path: str, scaling: VariantScaling) -> list[Problem]:
    problems = []
    if scaling.min_capacity > scaling.max_capacity:
        problems.append(
            (f"{path}.min_capacity", f"must be at most max_capacity {scaling.max_capacity}, got {scaling.min_capacity}")
        )
    count = cfg.variant(name).initial_instance_count
    if not scaling.min_capacity <= count <= scaling.max_capacity:
        problems += refuse(
            path,
            f"{variant_path(cfg.variants, name, 'initial_instance_count')} {count} must lie in "
            f"{scaling.min_capacity}-{scaling.max_capacity} (min_capacity-max_capacity)",
        )
    return problems


def _check_tracking(cfg: EnvironmentConfig, name: str, path: str) -> list[Problem]:
    """One target: explicit, or a share of the capacity figure (config.scaling_target) that has a figure
    to be a share of. An explicit target against the capacity is config.checks.capacity's rule."""
    tracking, variant = cfg.autoscaling[name].target_tracking, cfg.variant(name)
    explicit, share = not is_none(tracking.target_value), not is_none(tracking.target_share_of_concurrency)
    if explicit == share:
        return refuse(
            path,
            "set exactly one of target_value and target_share_of_concurrency (high-resolution metric), got "
            + ("both" if explicit else "neither"),
        )
    if share and tracking.metric != HIGH_RESOLUTION:
        return refuse(
            f"{path}.target_share_of_concurrency",
            f"is a share of planning.capacity.<type>.concurrent_sequences, for metric {HIGH_RESOLUTION} only; "
            f"metric {tracking.metric} takes target_value",
        )
    if share and saturating_capacity(cfg, variant, tracking.metric) is None:
        return refuse(
            f"{path}.target_share_of_concurrency",
            f"needs a planning.capacity figure for one of {', '.join(variant.instance_types)} "
            f"(variants '{name}'), found none",
        )
    return []


def _check_step_scaling(path: str, scaling: VariantScaling) -> list[Problem]:
    problems = []
    for i, policy in enumerate(scaling.step_scaling):
        problems += skip_invalid(_check_step_policy, f"{path}.step_scaling[{i}]", policy)
    return problems


def _check_step_policy(where: str, policy: EngineStepScaling) -> list[Problem]:
    problems = []
    if policy.metric not in contract.VARIANT_METRICS:
        known = ", ".join(contract.VARIANT_METRICS)
        problems.append((f"{where}.metric", f"the serving image emits no {quote(policy.metric)}; it emits {known}"))
    bounds = [step.at_or_above for step in policy.scale_out]
    if bounds != sorted(set(bounds)):
        problems.append((f"{where}.scale_out", f"at_or_above must rise step by step, got {quote(bounds)}"))
    if not is_none(policy.scale_in_below) and policy.scale_in_below >= bounds[0]:
        problems += refuse(
            f"{where}.scale_in_below",
            f"must be below the first scale-out step {bounds[0]}, got {policy.scale_in_below}",
        )
    return problems


def _check_schedules(path: str, scaling: VariantScaling) -> list[Problem]:
    problems = []
    windows = []  # (name, zone, start cron, end cron)
    for i, window in enumerate(scaling.schedules):
        problems += skip_invalid(_check_window_capacity, f"{path}.schedules[{i}]", window, scaling)
        problems += skip_invalid(_check_window_name, f"{path}.schedules[{i}]", window, scaling.schedules[:i])
        parsed = skip_invalid(_parse_window, f"{path}.schedules[{i}]", window)
        if isinstance(parsed, tuple):
            windows.append(parsed)
        else:
            problems += parsed
    if not problems and len(windows) == len(scaling.schedules):
        problems += _check_timeline(path, windows)
    return problems


def _check_window_name(where: str, window: ScheduledWindow, earlier: list[ScheduledWindow]) -> list[Problem]:
    if any(window.name == other.name for other in earlier):
        return [(f"{where}.name", f"schedule names must be unique, '{window.name}' repeats")]
    return []


# A window's maximum leaves target tracking room above its floor: a 10 % error in demand or capacity
# otherwise queues with nothing to fix it (issue 37 item 4).
WINDOW_ROOM = 1.2


def _check_window_capacity(where: str, window: ScheduledWindow, scaling: VariantScaling) -> list[Problem]:
    problems = []
    if not 1 <= window.min_capacity <= scaling.max_capacity:
        problems += refuse(
            f"{where}.min_capacity",
            f"must lie within the target's 1-{scaling.max_capacity} (max_capacity), got {window.min_capacity}",
        )
    if not is_none(window.max_capacity) and not window.min_capacity <= window.max_capacity <= scaling.max_capacity:
        problems += refuse(
            f"{where}.max_capacity",
            f"must lie within min_capacity {window.min_capacity} and the target's max_capacity "
            f"{scaling.max_capacity}, got {window.max_capacity}",
        )
    elif not problems and not is_none(window.max_capacity) and is_none(window.max_capacity_reason):
        room = min(math.ceil(WINDOW_ROOM * window.min_capacity), scaling.max_capacity)
        if window.max_capacity < room:
            problems += refuse(
                f"{where}.max_capacity",
                f"must be at least {WINDOW_ROOM:g} x min_capacity {window.min_capacity} = {room} (or the target's "
                f"max_capacity) so target tracking has room above the floor, got {window.max_capacity}; or say "
                "why not in max_capacity_reason",
            )
    return problems


def _parse_window(where: str, window: ScheduledWindow) -> tuple | list[Problem]:
    """(name, zone, start, end) ready to simulate, or the problems of its time zone, crons and DST."""
    parsed = _parse_window_text(where, window.timezone, window.start, window.end)
    if isinstance(parsed, _ParsedWindow):
        return window.name, parsed.zone, parsed.start, parsed.end
    return list(parsed)


@dataclass(frozen=True)
class _ParsedWindow:
    zone: ZoneInfo
    start: Cron
    end: Cron


# The DST walk and the simulated timeline depend on the windows' text alone, and a process that loads
# one config many times (an ops command reads it more than once, a test process hundreds of times)
# computes them once: ~28 ms of the ~34 ms prod's checks take. A value that failed validation
# (config.sections.INVALID) refuses to be hashed, so the check is skipped as before.
@lru_cache(maxsize=1024)
def _parse_window_text(where: str, timezone: str, start: str, end: str) -> _ParsedWindow | tuple[Problem, ...]:
    parsed, problems = {}, []
    for field, value in (("timezone", timezone), ("start", start), ("end", end)):
        try:
            parsed[field] = time_zone(value) if field == "timezone" else Cron(value)
        except CronError as error:
            problems.append((f"{where}.{field}", str(error)))
    if problems:
        return tuple(problems)
    zone = parsed["timezone"]
    for field in ("start", "end"):
        problems += _check_dst(f"{where}.{field}", parsed[field], zone)
    if problems:
        return tuple(problems)
    return _ParsedWindow(zone, parsed["start"], parsed["end"])


def _check_dst(where: str, cron: Cron, zone: ZoneInfo) -> list[Problem]:
    """A firing in a DST gap (a local time that does not exist) or fold (one that happens twice):
    AWS does not document which instant it picks, so such a window is refused with the day and time."""
    years = DST_YEARS if cron.years is None else sorted(y for y in cron.years if y >= DST_YEARS[0])[: len(DST_YEARS)]
    for year in years:
        for instant, before, after in utc_offset_changes(zone, year):
            first, last = sorted((instant + before, instant + after))  # the wall-clock span skipped or repeated
            wall = first.replace(tzinfo=None)
            while wall < last.replace(tzinfo=None):
                if cron.fires_at_wall_time(wall):
                    what = "does not exist (clocks jump" if after > before else "happens twice (clocks go back"
                    change = (instant + before).replace(tzinfo=None), (instant + after).replace(tzinfo=None)
                    return refuse(
                        where,
                        f"{cron.expression} fires at {wall:%H:%M} {zone.key} on {wall:%Y-%m-%d}, a local time that "
                        f"{what} from {change[0]:%H:%M} to {change[1]:%H:%M}); move it outside "
                        f"{first:%H:%M}-{last:%H:%M} on DST change days",
                    )
                wall += timedelta(minutes=1)
    return []


def _check_timeline(path: str, windows: list) -> list[Problem]:
    """Simulate the firings: every raise returns before it fires again, no overlaps, no shared instants."""
    texts = tuple((name, zone.key, start.expression, end.expression) for name, zone, start, end in windows)
    return list(_simulated_timeline(path, texts))


@lru_cache(maxsize=256)
def _simulated_timeline(path: str, texts: tuple[tuple[str, str, str, str], ...]) -> tuple[Problem, ...]:
    windows = [(name, time_zone(zone), Cron(start), Cron(end)) for name, zone, start, end in texts]
    spans, problems = list(SIMULATION_STARTS), []
    for name, zone, start, _ in windows:
        first = start.next_firing(zone, datetime.combine(FIRST_DAY, time(), zone))
        if first is None:
            problems.append((f"{path}.schedules", f"{name} never starts on or after {FIRST_DAY}: {start.expression}"))
        elif not any(_fires_in(start, zone, day) for day in spans):
            spans.append(first.date())
    if problems:
        return tuple(problems)
    for first_day in spans:
        problems += _check_span(path, windows, first_day)
        if problems:
            break
    return tuple(dict.fromkeys(problems))


def _fires_in(cron: Cron, zone: ZoneInfo, first_day: date) -> bool:
    return next(cron.firings(zone, first_day, SIMULATION_DAYS), None) is not None


def _check_span(path: str, windows: list, first_day: date) -> list[Problem]:
    problems: list[Problem] = []
    actions: dict[datetime, str] = {}
    intervals = []
    limit = MAX_STARTS_PER_DAY * SIMULATION_DAYS
    for name, zone, start, end in windows:
        starts = list(islice(start.firings(zone, first_day, SIMULATION_DAYS), limit + 1))
        ends = list(islice(end.firings(zone, first_day, SIMULATION_DAYS), limit + 1))
        if len(starts) > limit or len(ends) > limit:
            return refuse(
                f"{path}.schedules",
                f"{name} fires more than {MAX_STARTS_PER_DAY} times a day; a scheduled window raises capacity "
                "for hours (each change takes minutes to provision): use target tracking for faster changes",
            )
        for moment, what in [*((s, f"{name}.start") for s in starts), *((e, f"{name}.end") for e in ends)]:
            instant = moment.astimezone(UTC)
            if instant in actions and actions[instant] != what:
                problems.append(
                    (f"{path}.schedules", f"{what} and {actions[instant]} both fire at {instant:%Y-%m-%d %H:%M} UTC")
                )
            actions[instant] = what
        for index, s in enumerate(starts):
            # The next end and the next start, also when they fall after the simulated days.
            end_time = next((e for e in ends if e > s), None) or end.next_firing(zone, s + timedelta(seconds=1))
            following = (
                starts[index + 1] if index + 1 < len(starts) else start.next_firing(zone, s + timedelta(seconds=1))
            )
            if end_time is None or (following is not None and end_time > following):
                problems += refuse(
                    f"{path}.schedules",
                    f"{name} raises capacity at {s:%a %H:%M %Z} with no end before it fires again",
                )
                break
            intervals.append((s.astimezone(UTC), end_time.astimezone(UTC), name))
    intervals.sort()
    for (_, end_a, name_a), (start_b, _, name_b) in zip(intervals, intervals[1:], strict=False):
        if start_b < end_a and name_a != name_b:
            problems += refuse(
                f"{path}.schedules",
                f"{name_a} and {name_b} overlap at {start_b:%Y-%m-%d %H:%M} UTC; "
                f"the first end would drop the other's capacity",
            )
    return problems
