"""Autoscaling rules: capacities, engine step scaling, and a simulated timeline of the schedules."""

from __future__ import annotations

from datetime import UTC, date, datetime

from config.schedules import Cron, CronError, time_zone
from config.schema import EnvironmentConfig, VariantScaling
from container.serving import contract

Problem = tuple[str, str]  # (field path, message naming the bad value and what is allowed)

# Two fortnights, one in winter and one in summer: US-Eastern peaks move against Tokyo with DST.
SIMULATION_STARTS = (date(2027, 1, 4), date(2027, 7, 5))
SIMULATION_DAYS = 14


def check_autoscaling(cfg: EnvironmentConfig) -> list[Problem]:
    problems = []
    variants = {v.name: v for v in cfg.variants}
    for name, scaling in cfg.autoscaling.items():
        path = f"autoscaling.{name}"
        if name not in variants:
            problems.append((path, f"no variant named '{name}'; variants: {', '.join(variants)}"))
            continue
        if scaling.min_capacity > scaling.max_capacity:
            problems.append(
                (
                    f"{path}.min_capacity",
                    f"must be at most max_capacity {scaling.max_capacity}, got {scaling.min_capacity}",
                )
            )
        count = variants[name].initial_instance_count
        if not scaling.min_capacity <= count <= scaling.max_capacity:
            problems.append(
                (
                    f"{path}",
                    f"variants.{name}.initial_instance_count {count} must lie in "
                    f"{scaling.min_capacity}-{scaling.max_capacity} (min_capacity-max_capacity)",
                )
            )
        problems += _check_step_scaling(path, scaling)
        problems += _check_schedules(path, scaling)
    return problems


def _check_step_scaling(path: str, scaling: VariantScaling) -> list[Problem]:
    problems = []
    for i, policy in enumerate(scaling.step_scaling):
        where = f"{path}.step_scaling[{i}]"
        if policy.metric not in contract.VARIANT_METRICS:
            known = ", ".join(contract.VARIANT_METRICS)
            problems.append((f"{where}.metric", f"the serving image emits no '{policy.metric}'; it emits {known}"))
        bounds = [step.at_or_above for step in policy.scale_out]
        if bounds != sorted(set(bounds)):
            problems.append((f"{where}.scale_out", f"at_or_above must rise step by step, got {bounds}"))
        if policy.scale_in_below is not None and policy.scale_in_below >= bounds[0]:
            problems.append(
                (
                    f"{where}.scale_in_below",
                    f"must be below the first scale-out step {bounds[0]}, got {policy.scale_in_below}",
                )
            )
    return problems


def _check_schedules(path: str, scaling: VariantScaling) -> list[Problem]:
    problems = []
    windows = []  # (name, zone, start cron, end cron)
    for i, window in enumerate(scaling.schedules):
        where = f"{path}.schedules[{i}]"
        if window.name in {w[0] for w in windows}:
            problems.append((f"{where}.name", f"schedule names must be unique, '{window.name}' repeats"))
        if not 1 <= window.min_capacity <= scaling.max_capacity:
            problems.append(
                (
                    f"{where}.min_capacity",
                    f"must lie within the target's 1-{scaling.max_capacity} (max_capacity), got {window.min_capacity}",
                )
            )
        if window.max_capacity is not None and not window.min_capacity <= window.max_capacity <= scaling.max_capacity:
            problems.append(
                (
                    f"{where}.max_capacity",
                    f"must lie within min_capacity {window.min_capacity} and the target's max_capacity "
                    f"{scaling.max_capacity}, got {window.max_capacity}",
                )
            )
        parsed = []
        for field, value in (("timezone", window.timezone), ("start", window.start), ("end", window.end)):
            try:
                parsed.append(time_zone(value) if field == "timezone" else Cron(value))
            except CronError as error:
                problems.append((f"{where}.{field}", str(error)))
        if len(parsed) == 3:
            windows.append((window.name, *parsed))
    if not problems:
        problems += _check_timeline(path, windows)
    return problems


def _check_timeline(path: str, windows: list) -> list[Problem]:
    """Simulate the firings: every raise returns before it fires again, no overlaps, no shared instants."""
    problems: list[Problem] = []
    for first_day in SIMULATION_STARTS:
        actions: dict[datetime, str] = {}
        intervals = []
        for name, zone, start, end in windows:
            starts = sorted(start.firings(zone, first_day, SIMULATION_DAYS))
            ends = sorted(end.firings(zone, first_day, SIMULATION_DAYS + 1))
            for moment, what in [*((s, f"{name}.start") for s in starts), *((e, f"{name}.end") for e in ends)]:
                instant = moment.astimezone(UTC)
                if instant in actions and actions[instant] != what:
                    problems.append(
                        (
                            f"{path}.schedules",
                            f"{what} and {actions[instant]} both fire at {instant:%Y-%m-%d %H:%M} UTC",
                        )
                    )
                actions[instant] = what
            for s, following in zip(starts, [*starts[1:], None], strict=True):
                end_time = next((e for e in ends if e > s), None)
                if end_time is None or (following is not None and end_time > following):
                    problems.append(
                        (
                            f"{path}.schedules",
                            f"{name} raises capacity at {s:%a %H:%M %Z} with no end before it fires again",
                        )
                    )
                    break
                intervals.append((s.astimezone(UTC), end_time.astimezone(UTC), name))
        intervals.sort()
        for (_, end_a, name_a), (start_b, _, name_b) in zip(intervals, intervals[1:], strict=False):
            if start_b < end_a and name_a != name_b:
                problems.append(
                    (
                        f"{path}.schedules",
                        f"{name_a} and {name_b} overlap at {start_b:%Y-%m-%d %H:%M} UTC; "
                        f"the first end would drop the other's capacity",
                    )
                )
        if problems:
            break
    return list(dict.fromkeys(problems))
