"""The search: offered rates rise step by step (x GROWTH) until the objective breaks, then the gap
between the last rate that held and the first that broke is halved (geometrically) until they are
within 10 %. The offered rates steer the search; the answer is what was served: the highest rate
answered within the objective (capacity.load) among the steps that held, per instance. A first rate that breaks
is followed by lower ones (/ GROWTH, down to `lowest_rpm`) until one holds: a search that starts from
the capacity the config plans with (capacity.measurement) finds the answer on either side of it.
GROWTH is just under 1.1^4, so a bracket of one rise is refined within 10 % in exactly two steps:
an answer takes at least SHORTEST_SEARCH steps (a rate that holds, the next that breaks, two
refinements), which is what a time budget is checked against before the sweep (capacity.measurement).

Each step ends with one of four results (`SweepOutcome.results`, `result` in capacity.json):
`held` and `broke` judge the server against the objective; `client-limited` means the load generator
could not send on schedule (its send lag p99 above `max_send_lag_ms`), so the step measured the client
whatever its latencies say; `interrupted` means Ctrl-C or SIGTERM cut the step short: a partial step, shown and kept in the
record but never judged nor counted among the steps measured.

A step is capacity.load.run_step's, or for conversations capacity.conversation_step's (`run_source_step`)."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.loadtest.conversation_step import run_conversation_step
from workbench.loadtest.conversations import SessionSource
from workbench.loadtest.load import StepResult, StepSettings, Target, judge, run_step
from workbench.loadtest.targets import RequestRecord

PRECISION = 1.10  # stop refining when the first broken rate is within 10 % of the last held one
GROWTH = 1.46  # < PRECISION ** 4: two geometric halvings of a one-rise bracket reach PRECISION
SHORTEST_SEARCH = 2 + math.ceil(math.log2(math.log(GROWTH) / math.log(PRECISION)))  # 4 steps
HELD, BROKE, CLIENT_LIMITED, INTERRUPTED = "held", "broke", "client-limited", "interrupted"


@dataclass(frozen=True)
class SweepSettings:
    slo_ttft_ms: float
    step_seconds: float
    max_minutes: float
    start_rpm: float  # per instance
    max_rpm: float  # per instance: never offered more
    growth: float = GROWTH
    # Per instance: after a first rate that breaks, lower ones down to this; None: start_rpm (no descent).
    lowest_rpm: float | None = None
    # A step whose own send lag p99 exceeds this is the generator's result, not the server's.
    max_send_lag_ms: float = 50.0
    # Conversations: each step first runs this long unmeasured (capacity.conversation_step).
    warmup_seconds: float = 0.0

    def request_ceiling(self, instances: int) -> int:
        """No run sends more: the highest rate for the whole time budget."""
        return math.ceil(self.max_rpm * instances * self.max_minutes)

    def step(self, offered_rpm: float, max_requests: int, deadline: float) -> StepSettings:
        """One step at `offered_rpm` per instance, within what the run has left."""
        return StepSettings(
            offered_rpm=offered_rpm,
            seconds=self.step_seconds,
            warmup_seconds=self.warmup_seconds,
            slo_ttft_ms=self.slo_ttft_ms,
            max_requests=max_requests,
            deadline=deadline,
        )


@dataclass
class SweepOutcome:
    steps: list[StepResult] = field(default_factory=list)
    results: list[str] = field(default_factory=list)  # per step: HELD, BROKE, CLIENT_LIMITED or INTERRUPTED
    # Per instance: the best step's rate answered within the objective (never its offered rate); None
    # when no step held.
    answer_rpm: float | None = None
    stopped: str = ""  # why the sweep ended

    @property
    def held(self) -> list[StepResult]:
        return [s for s, result in zip(self.steps, self.results, strict=True) if result == HELD]

    @property
    def measured(self) -> list[StepResult]:
        """The steps that ran to their end and were judged: every step but an interrupted one."""
        return [s for s, result in zip(self.steps, self.results, strict=True) if result != INTERRUPTED]

    @property
    def partial(self) -> list[StepResult]:
        """The step Ctrl-C or SIGTERM cut short, if any: shown, never judged."""
        return [s for s, result in zip(self.steps, self.results, strict=True) if result == INTERRUPTED]

    @property
    def complete(self) -> bool:
        return self.stopped in ("refined", "max rate held")

    def best(self) -> StepResult | None:
        """The held step that answered the most within the objective (the higher offer on a tie)."""
        return max(self.held, key=lambda s: (s.answered_within_objective_rpm or 0.0, s.offered_rpm), default=None)

    def answer_step(self) -> int | None:
        """The best step's number (1-based, as the progress lines count them)."""
        best = self.best()
        return None if best is None else self.steps.index(best) + 1


async def sweep(
    target: Target,
    bodies: Iterator[dict[str, Any]] | SessionSource,
    settings: SweepSettings,
    stop: threading.Event,
    say: Callable[[str], None],
    on_step: Callable[[SweepOutcome], None] = lambda _: None,
    seed: int = 1,
) -> SweepOutcome:
    outcome = SweepOutcome()
    rng = random.Random(seed)
    deadline = time.perf_counter() + settings.max_minutes * 60
    requests_left = settings.request_ceiling(target.instances)
    good: float | None = None
    bad: float | None = None
    rate = settings.start_rpm
    while True:
        if stop.is_set():
            outcome.stopped = "interrupted"
            break
        if time.perf_counter() + settings.warmup_seconds + settings.step_seconds > deadline or requests_left <= 0:
            outcome.stopped = f"time budget (--max-minutes {settings.max_minutes:g}) spent before the search finished"
            break
        warmup = f" after {settings.warmup_seconds:g} s of warm-up" if settings.warmup_seconds else ""
        say(
            f"step {len(outcome.steps) + 1}: offering {rate:,.0f} requests/min per instance for {settings.step_seconds:g} s"
            + warmup
        )
        step, _ = await run_source_step(target, bodies, settings.step(rate, requests_left, deadline), stop, rng, say)
        requests_left -= step.requests + step.warmup_requests
        result = _judged(step, settings, stop.is_set())
        outcome.steps.append(step)
        outcome.results.append(result)
        say(step_line(step, result, settings))
        on_step(outcome)
        if result == INTERRUPTED:
            outcome.stopped = "interrupted"
            break
        if result == CLIENT_LIMITED:
            outcome.stopped = (
                f"the generator fell behind: send lag p99 {step.send_lag_p99_ms:.0f} ms > {settings.max_send_lag_ms:g} ms "
                "at this rate, so this step measures the client; run from a larger machine"
            )
            break
        if step.held:
            good = rate
        else:
            bad = rate
        if bad is None:
            if rate >= settings.max_rpm:
                outcome.stopped = "max rate held"
                break
            rate = min(rate * settings.growth, settings.max_rpm)
            continue
        if good is None:  # every rate so far broke: go lower, down to lowest_rpm
            lowest = settings.start_rpm if settings.lowest_rpm is None else settings.lowest_rpm
            if rate <= lowest:
                outcome.stopped = f"the objective broke at the lowest rate offered ({rate:,.0f}/min): lower --start-rpm"
                break
            rate = max(rate / settings.growth, lowest)
            continue
        if bad / good <= PRECISION:
            outcome.stopped = "refined"
            break
        rate = math.sqrt(good * bad)
    best = outcome.best()
    outcome.answer_rpm = best.answered_within_objective_rpm if best else None
    return outcome


def step_line(step: StepResult, result: str, settings: SweepSettings) -> str:
    """A step's figures as the run prints them at its end: offered and answered within the objective
    (per minute, per instance), then errors, shed, TTFT p95 and send lag, then its result."""
    partial = f" (partial: {step.seconds:.1f} s of {settings.step_seconds:g} s)" if result == INTERRUPTED else ""
    return (
        f"  offered {step.offered_rpm:,.0f}/min{partial}: {step.requests} requests, {step.answered_within_objective} "
        f"answered within the objective (TTFT <= {settings.slo_ttft_ms:g} ms) = "
        f"{step.answered_within_objective_rpm:,.0f}/min, errors {step.errors}, shed {step.shed}, TTFT p95 "
        f"{_ms(step.ttft_p95_ms)}, send lag p99 "
        f"{_ms(step.send_lag_p99_ms)}: {shown(result, step.verdict)}"
    )


async def run_source_step(
    target: Target,
    source: Iterator[dict[str, Any]] | SessionSource,
    settings: StepSettings,
    stop: threading.Event,
    rng: random.Random,
    progress: Callable[[str], None],
) -> tuple[StepResult, list[RequestRecord]]:
    """One step of whatever the workload is: sessions (run_conversation_step) or bodies (run_step, which has
    no warm-up)."""
    if isinstance(source, SessionSource):
        return await run_conversation_step(target, source, settings, stop, rng, progress)
    return await run_step(target, source, settings, stop, rng, progress)


def _judged(step: StepResult, settings: SweepSettings, interrupted: bool) -> str:
    """The step's result; `step.held` is True only for HELD, and `step.verdict` says why."""
    if interrupted:  # cut short by Ctrl-C or SIGTERM: too few answers to judge
        step.held, step.verdict = False, INTERRUPTED
        return INTERRUPTED
    judge(step, settings.slo_ttft_ms)
    lag = step.send_lag_p99_ms
    if lag is not None and lag > settings.max_send_lag_ms:
        server = f"{'held' if step.held else 'broke'}: {step.verdict}"
        step.held = False
        step.verdict = (
            f"send lag p99 {lag:.0f} ms > {settings.max_send_lag_ms:g} ms: the generator could not send on "
            f"schedule, so the step measured the client (the server's figures: {server})"
        )
        return CLIENT_LIMITED
    return HELD if step.held else BROKE


def shown(result: str, verdict: str) -> str:
    """'held (TTFT p95 310 ms <= 500 ms)', 'interrupted': a step's result with its reason, once."""
    return result if verdict in ("", result) else f"{result} ({verdict})"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"
