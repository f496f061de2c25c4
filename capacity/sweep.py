"""The search: offered rates rise step by step until the objective breaks, then the gap between the
last rate that held and the first that broke is halved (geometrically) until they are within 10 %.
The answer is the highest offered rate that held, per instance."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from capacity.load import StepResult, Target, judge, run_step

PRECISION = 1.10  # stop refining when the first broken rate is within 10 % of the last held one


@dataclass(frozen=True)
class SweepSettings:
    slo_ttft_ms: float
    step_seconds: float
    max_minutes: float
    start_rpm: float  # per instance
    max_rpm: float  # per instance: never offered more
    growth: float = 1.5
    # A step whose own send lag p99 exceeds this is the generator's result, not the server's.
    max_send_lag_ms: float = 50.0

    def request_ceiling(self, instances: int) -> int:
        """No run sends more: the highest rate for the whole time budget."""
        return math.ceil(self.max_rpm * instances * self.max_minutes)


@dataclass
class SweepOutcome:
    steps: list[StepResult] = field(default_factory=list)
    answer_rpm: float | None = None  # per instance; None when no rate held
    stopped: str = ""  # why the sweep ended

    @property
    def held(self) -> list[StepResult]:
        return [s for s in self.steps if s.held]

    @property
    def complete(self) -> bool:
        return self.stopped in ("refined", "max rate held")

    def best(self) -> StepResult | None:
        return max(self.held, key=lambda s: s.offered_rpm, default=None)


async def sweep(
    target: Target,
    bodies: Iterator[dict[str, Any]],
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
        if time.perf_counter() + settings.step_seconds > deadline or requests_left <= 0:
            outcome.stopped = f"time budget (--max-minutes {settings.max_minutes:g}) spent before the search finished"
            break
        say(
            f"step {len(outcome.steps) + 1}: offering {rate:,.0f} requests/min per instance for {settings.step_seconds:g} s"
        )
        step, _ = await run_step(
            target, bodies, rate, settings.step_seconds, stop, rng, say, max_requests=requests_left, deadline=deadline
        )
        requests_left -= step.requests
        judge(step, settings.slo_ttft_ms)
        if stop.is_set():
            step.held, step.verdict = False, "interrupted"
        outcome.steps.append(step)
        say(
            f"  {step.requests} requests, {step.achieved_rpm:,.0f}/min answered, TTFT p95 "
            f"{_ms(step.ttft_p95_ms)}, errors {step.error_percent:.1f} %, send lag p99 {_ms(step.send_lag_p99_ms)}: "
            f"{'held' if step.held else 'broke'} ({step.verdict})"
        )
        on_step(outcome)
        if stop.is_set():
            outcome.stopped = "interrupted"
            break
        if step.send_lag_p99_ms is not None and step.send_lag_p99_ms > settings.max_send_lag_ms:
            outcome.stopped = (
                f"the generator fell behind: send lag p99 {step.send_lag_p99_ms:.0f} ms > {settings.max_send_lag_ms:g} ms "
                "at this rate, so this step measures the client; run from a larger machine"
            )
            step.held = False
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
        if good is None:
            outcome.stopped = f"the objective broke at the lowest rate offered ({rate:,.0f}/min): lower --start-rpm"
            break
        if bad / good <= PRECISION:
            outcome.stopped = "refined"
            break
        rate = math.sqrt(good * bad)
    best = outcome.best()
    outcome.answer_rpm = best.offered_rpm if best else None
    return outcome


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"
