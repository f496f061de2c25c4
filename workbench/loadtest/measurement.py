"""The capacity tool as a library: `measure(target, workload, settings)` runs the sweep against one
target, writes the report after every step (capacity.json and .md) and once more at the end with its
plot (also when Ctrl-C or SIGTERM stops it), and returns what was measured. Nothing here opens an environment or calls AWS: the caller
builds the target (capacity.targets) and the workload (capacity.conversations, capacity.workload,
capacity.capture); `bin/loadtest` is one such caller (workbench/loadtest/cli.py)."""

from __future__ import annotations

import asyncio
import math
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from workbench.loadtest.conversations import SessionSource
from workbench.loadtest.load import Target
from workbench.loadtest.report import RunFacts, answer_text, steps_text, write
from workbench.loadtest.sweep import GROWTH, SHORTEST_SEARCH, SweepOutcome, SweepSettings, sweep

MIN_STEP_SECONDS = 60  # the default: about 1,000 requests a step at the seeds' rate, enough for a p95
REPORTS_DIR = Path("capacity-out")
LOWEST_SHARE = 0.1  # a search from the config's figure goes down to a tenth of it at most


class SettingsError(ValueError):
    """Settings no sweep can run with; the message names the option."""


class MeasuredTarget(Target, Protocol):
    """A UrlTarget or a VariantTarget (capacity.targets)."""

    @property
    def name(self) -> str: ...  # how the run is shown: a URL, or ENV/VARIANT

    @property
    def directory_name(self) -> str: ...  # the default report directory's name, before its time

    def describe(self) -> dict[str, Any]: ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...


class RequestSource(Protocol):
    """A ConversationWorkload (capacity.conversations), a Workload or a CapturedWorkload (capacity.workload)."""

    def source(self, seed: int = 0) -> Iterator[dict[str, Any]] | SessionSource: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class MeasureSettings:
    """What to measure against and for how long. Rates are per instance; a rate left None defaults
    from `planned_rpm` (the figure planning.capacity holds today for the instance type), or from the
    seeds' scale when there is none."""

    slo_ttft_ms: float  # the objective: TTFT p95 at most this (and at most 1 % errors)
    step_seconds: float = MIN_STEP_SECONDS
    max_minutes: float = 30  # the whole run stops by itself after this long
    start_rpm: float | None = None  # default: planned_rpm (searched both ways from it), or 60
    max_rpm: float | None = None  # never offered more; default: 3 × planned_rpm, or 3,600
    max_send_lag_ms: float = 50.0  # a step whose send lag p99 exceeds this measured the client
    planned_rpm: float | None = None
    out: Path | None = None  # default: capacity-out/<target>-<UTC time>/
    warmup_seconds: float | None = None  # conversations' unmeasured start of a step; default: the workload's

    def sweep_settings(self, default_warmup_seconds: float | None = None) -> SweepSettings:
        """The sweep's settings; `default_warmup_seconds` is a conversation workload's (None: a workload
        of independent requests, which has no warm-up)."""
        planned = self.planned_rpm
        start = self.start_rpm or planned or 60.0
        # From the config's figure the search goes down too, to a tenth of it; a given --start-rpm is the lowest.
        lowest = planned * LOWEST_SHARE if planned and not self.start_rpm else start
        highest = self.max_rpm or (planned * 3 if planned else 3600.0)
        if start > highest:
            raise SettingsError(f"--start-rpm {start:g} is above --max-rpm {highest:g}")
        warmup = 0.0 if default_warmup_seconds is None else self.warmup_seconds
        warmup = default_warmup_seconds if warmup is None else warmup
        self._check_budget(warmup, one_rate=start >= highest)
        return SweepSettings(
            slo_ttft_ms=self.slo_ttft_ms,
            step_seconds=self.step_seconds,
            max_minutes=self.max_minutes,
            start_rpm=start,
            max_rpm=highest,
            max_send_lag_ms=self.max_send_lag_ms,
            warmup_seconds=warmup,
            lowest_rpm=min(lowest, start),
        )

    def _check_budget(self, warmup: float, one_rate: bool) -> None:
        """Refuse, before any request, a time budget in which no search can end with an answer; one rate
        (--start-rpm at --max-rpm) is one step."""
        step = warmup + self.step_seconds
        needed = (1 if one_rate else SHORTEST_SEARCH) * step
        if needed <= self.max_minutes * 60:
            return
        each = f"{warmup:g} s warm-up + {self.step_seconds:g} s" if warmup else f"{self.step_seconds:g} s"
        raise SettingsError(
            f"--max-minutes {self.max_minutes:g} cannot give an answer: the shortest search that can "
            f"({SHORTEST_SEARCH} steps: a rate that holds, one {GROWTH:g}x above it that breaks, two refinements "
            f"to within 10 %) takes {SHORTEST_SEARCH} x ({each}) = {needed / 60:.1f} min plus the answers' own "
            f"time, and each further {GROWTH:g}x between the first rate and the answer adds a step; give "
            f"--max-minutes {math.ceil(needed / 60)} or more, {math.ceil((needed + step) / 60)} for an answer up "
            f"to {GROWTH**2:.1f}x above the first rate (or shorter --step-seconds / --warmup-seconds)"
        )


@dataclass(frozen=True)
class Measurement:
    """The sweep's outcome and the record written to `out`/capacity.json."""

    outcome: SweepOutcome
    record: dict[str, Any]
    out: Path

    @property
    def answer(self) -> float | None:
        """Requests a minute one instance answered within the objective in the best step that held it
        (capacity.load, capacity.sweep); None when no step held it."""
        return self.record["requests_per_minute_per_instance"]

    @property
    def interrupted(self) -> bool:
        return self.outcome.stopped == "interrupted"

    def interruption(self) -> str:
        """The one line an interrupted run ends with: the steps measured and the one cut short, counted
        exactly, and the answer so far (a lower bound)."""
        return f"interrupted: {steps_text(self.record)}; {answer_text(self.record)}; written to {self.out}/"


def say_line(line: str) -> None:
    print(line, flush=True)  # flushed: a reader of a pipe sees each step as it ends


def measure(
    target: MeasuredTarget,
    workload: RequestSource,
    settings: MeasureSettings,
    say: Callable[[str], None] = say_line,
) -> Measurement:
    """Run the sweep (raises SettingsError first if the settings cannot make one) and write the report.

    SIGINT and SIGTERM stop it within a fraction of a second; what was measured is still written, and
    the result says `interrupted`. Must run in the main thread (signal handlers)."""
    source = workload.source()
    rates = settings.sweep_settings(source.workload.warmup_seconds if isinstance(source, SessionSource) else None)
    measured_at = datetime.now(UTC)
    out = settings.out or REPORTS_DIR / f"{target.directory_name}-{measured_at:%Y%m%dT%H%M%SZ}"
    say(
        f"Capacity sweep of {target.name} ({target.instances} instance(s)): objective TTFT p95 <= "
        f"{settings.slo_ttft_ms:g} ms and <= 1 % errors; steps of {settings.step_seconds:g} s from "
        f"{rates.start_rpm:,.0f} up to at most {rates.max_rpm:,.0f} requests/min per instance"
        f"{_warmup_text(rates.warmup_seconds)}; stops after "
        f"{settings.max_minutes:g} min; at most {rates.request_ceiling(target.instances):,} requests in all. "
        f"Report: {out}/"
    )
    facts = RunFacts(
        target=target.describe(),
        instances=target.instances,
        slo_ttft_ms=settings.slo_ttft_ms,
        workload=workload.describe(),
        measured_at=measured_at,
        settings={"step_seconds": settings.step_seconds, "max_minutes": settings.max_minutes,
                  "start_rpm": rates.start_rpm, "max_rpm": rates.max_rpm, "max_send_lag_ms": rates.max_send_lag_ms,
                  "warmup_seconds": rates.warmup_seconds},
    )  # fmt: skip
    outcome = asyncio.run(_run(target, source, rates, say, lambda o: write(o, facts, out, drawn=False)))
    read_signal = getattr(target, "read_scaling_signal", None)  # a real endpoint's: loadtest.signal_reading
    if read_signal is not None and outcome.stopped != "interrupted":
        read_signal(outcome.steps)
    return Measurement(outcome, write(outcome, facts, out), out)


def _warmup_text(seconds: float) -> str:
    """How a conversation step begins, as the run's first line says it."""
    if not seconds:
        return ""
    return f" (conversations: each step after {seconds:g} s of unmeasured warm-up)"


async def _run(
    target: MeasuredTarget,
    bodies: Iterator[dict[str, Any]] | SessionSource,
    rates: SweepSettings,
    say: Callable[[str], None],
    on_step: Callable[[SweepOutcome], None],
) -> SweepOutcome:
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await target.open()
    try:
        return await sweep(target, bodies, rates, stop, say, on_step=on_step)
    finally:
        await target.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
