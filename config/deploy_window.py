"""When a deploy may start: never so that its blue/green update overlaps a scheduled peak window.

"Auto scaling is blocked while the update operation is in progress" (SageMaker, endpoint-scaling-update
page; DESIGN 3.2): a scheduled raise or a scale-out that falls inside a blue/green update does not
happen, so the update must end before the environment's next peak starts. Its duration comes from
config: the green fleet's start (`planning.provisioning_minutes`, the figure the planner uses for a
new instance to serve), one bake per traffic step (`deployment.wait_interval_seconds`) and the
termination wait (`deployment.termination_wait_seconds`).

The guard judges the worst case, not the expected length: a deploy that usually ends in time can
still be Updating when a window's pre-scale fires, and SageMaker will not apply the raise then. The
worst case is every timeout the update can spend before traffic moves (botocore's ProductionVariant:
VariantInstanceProvisionTimeoutInSeconds for capacity, ModelDataDownloadTimeoutInSeconds,
ContainerStartupHealthCheckTimeoutInSeconds), then the bakes and the termination wait, capped by
BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds ("maximum execution timeout for the deployment").
Without a provisioning timeout in config, SageMaker's is not documented: the cap bounds it.

A peak window is a scheduled window that raises a variant's floor above its `min_capacity` (a window
that only caps the ceiling, like tokyo-off-peak, is not one). Firings come from config.schedules, in
each window's IANA zone, so DST moves them as it moves the scheduled actions.

`make deploy` runs `python -m ops.pipeline.deploy_window ENV` first; `python -m ops deploy` calls `check`.
Both go ahead inside a peak only when told to (`FORCE_PEAK=1`, `--during-peak`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from config.blue_green_timeout import describe_parts, execution_timeout
from config.checks import steps_to_full_traffic
from config.schedules import Cron, time_zone
from config.schema import EnvironmentConfig

# Windows that started this long ago may still be open; the search for a safe start gives up after
# the look-ahead (schedules repeat weekly at the longest).
LOOK_BACK = timedelta(days=8)
LOOK_AHEAD = timedelta(days=8)


@dataclass(frozen=True)
class PeakWindow:
    variant: str
    name: str
    zone: str
    start: datetime  # aware, in the window's zone
    end: datetime

    def describe(self) -> str:
        return f"{self.variant} '{self.name}' {self.start:%a %Y-%m-%d %H:%M}-{self.end:%H:%M} {self.zone}"


@dataclass(frozen=True)
class Verdict:
    """`clash` is the first peak window the deploy would overlap, None when it may start now."""

    now: datetime
    duration: timedelta
    clash: PeakWindow | None
    safe_start: datetime | None  # earliest start that overlaps no peak (None: none in LOOK_AHEAD)
    safe_until: datetime | None  # the latest start in that safe window (None: open-ended)


def deploy_duration(cfg: EnvironmentConfig) -> tuple[timedelta, str]:
    """Expected length of a blue/green update and the arithmetic behind it."""
    d = cfg.deployment
    steps = steps_to_full_traffic(cfg)
    start = cfg.planning.provisioning_minutes * 60
    seconds = start + steps * d.wait_interval_seconds + d.termination_wait_seconds
    how = (
        f"green fleet start {start} s (planning.provisioning_minutes) + {steps} x {d.wait_interval_seconds} s bake "
        f"(deployment.wait_interval_seconds, {d.traffic_routing}) + {d.termination_wait_seconds} s "
        "(deployment.termination_wait_seconds)"
    )
    return timedelta(seconds=seconds), how


def peak_windows(cfg: EnvironmentConfig, start: datetime, end: datetime) -> list[PeakWindow]:
    """Every peak window of every variant that is open at some moment in [start, end), by start."""
    windows = []
    for variant, scaling in cfg.autoscaling.items():
        for window in scaling.schedules:
            if window.min_capacity <= scaling.min_capacity:
                continue
            zone = time_zone(window.timezone)
            ends = list(Cron(window.end).firings_between(zone, start - LOOK_BACK, end + LOOK_BACK))
            for opened in Cron(window.start).firings_between(zone, start - LOOK_BACK, end):
                closed = next((e for e in ends if e > opened), None)  # synth checked every raise has one
                if closed is not None and closed > start:
                    windows.append(PeakWindow(variant, window.name, window.timezone, opened, closed))
    return sorted(windows, key=lambda w: w.start)


def worst_case_duration(cfg: EnvironmentConfig) -> tuple[timedelta, str]:
    """The longest a blue/green update can hold the endpoint Updating, and the arithmetic behind it: the
    execution timeout, which covers the update's parts (config/blue_green_timeout.py, refused otherwise)."""
    timeout = execution_timeout(cfg)
    source = "maximum_execution_timeout_seconds" if cfg.deployment.maximum_execution_timeout_seconds else "derived"
    return timedelta(seconds=timeout), f"deployment timeout {timeout} s, {source}: {describe_parts(cfg)}"


def check(cfg: EnvironmentConfig, now: datetime) -> Verdict:
    duration, _ = worst_case_duration(cfg)
    windows = peak_windows(cfg, now, now + LOOK_AHEAD + duration)
    clash = _first_overlap(windows, now, duration)
    start: datetime | None = now
    while start is not None and (blocking := _first_overlap(windows, start, duration)) is not None:
        start = blocking.end if blocking.end < now + LOOK_AHEAD else None
    if clash is None or start is None:
        return Verdict(now, duration, clash, start, None)
    following = next((w.start for w in windows if w.start >= start + duration), None)
    return Verdict(now, duration, clash, start, None if following is None else following - duration)


def _first_overlap(windows: list[PeakWindow], start: datetime, duration: timedelta) -> PeakWindow | None:
    return next((w for w in windows if w.start < start + duration and w.end > start), None)


def refusal(cfg: EnvironmentConfig, verdict: Verdict, force_hint: str) -> str:
    """The message for a refused deploy: which window, why, and when the next safe start is."""
    assert verdict.clash is not None
    clash = verdict.clash
    expected, _ = deploy_duration(cfg)
    _, how = worst_case_duration(cfg)
    zone = clash.start.tzinfo
    lines = [
        f"refusing to deploy {cfg.name} at {_when(verdict.now, zone)}: the blue/green update takes about "
        f"{in_minutes(expected)} and at worst {in_minutes(verdict.duration)} ({how}), which reaches the pre-scale "
        f"of the peak window {clash.describe()} (autoscaling.{clash.variant}.schedules: {clash.name}); autoscaling "
        "is blocked during an update, so the raise would not be applied and the peak could not scale out",
    ]
    if verdict.safe_start is None:
        lines.append(f"no safe start in the next {LOOK_AHEAD.days} days: every gap between peaks is shorter")
    else:
        until = "" if verdict.safe_until is None else f", latest start {_when(verdict.safe_until, zone)}"
        lines.append(f"next safe window opens {_when(verdict.safe_start, zone)}{until}")
    lines.append(f"to deploy during the peak anyway: {force_hint}")
    return "\n".join(lines)


def _when(moment: datetime, zone) -> str:
    local = moment.astimezone(zone)
    return f"{local:%a %Y-%m-%d %H:%M %Z} ({moment.astimezone(UTC):%H:%M} UTC)"


def in_minutes(duration: timedelta) -> str:
    return f"{round(duration.total_seconds() / 60)} min"
