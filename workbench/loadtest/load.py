"""One step of the sweep: open-loop Poisson arrivals at a fixed offered rate for a fixed time.

Requests are sent on their schedule whether or not earlier ones have answered, and every time is
measured from the scheduled send time, so a slow server (or a slow generator) cannot hide its queue:
closed-loop "N users" figures hide exactly the queueing autoscaling has to prevent. The generator's own
lag (actual send minus schedule) is reported so that a result it distorts can be refused.

A step's rates are per minute of its schedule (the window its requests were scheduled in, `seconds`,
or the part of it run before Ctrl-C) and per instance. "Answered within the objective" is a request
answered without error (status 200, a complete stream, no error event) whose first token arrived
within the TTFT objective of its scheduled send time; a shed request (429) never is, however fast.
The sweep's answer is the highest such rate among the steps that held (capacity.sweep), never the
rate offered.

The conversation step (sessions of turns) is capacity.conversation_step; it shares this module's
arrival process, waiting, summary and judgment.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from workbench.loadtest.targets import REQUEST_TIMEOUT_SECONDS, RequestRecord

STOP_POLL_SECONDS = 0.2  # how soon Ctrl-C or SIGTERM stops a step
MAX_ERROR_PERCENT = 1.0  # the objective: at most 1 % errors (5xx, 4xx, stream errors, timeouts)
# ... and no request shed (429 from the admission check): the instance said it was over capacity.
# Turn indexes the report groups TTFT and prompt tokens by: first turns against later ones.
TURN_GROUPS = ((1, 1), (2, 2), (3, 4), (5, 8), (9, None))


class Target(Protocol):
    instances: int

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None: ...


@dataclass(frozen=True)
class StepSettings:
    """What one step offers and within which limits (the sweep makes one per step; run_step,
    conversation_step.run_conversation_step and sweep.run_source_step take it whole)."""

    offered_rpm: float  # per instance
    seconds: float  # the measured window
    warmup_seconds: float = 0.0  # conversations only: this long unmeasured first (capacity.conversation_step)
    slo_ttft_ms: float | None = None  # with it, the summary counts the requests answered within it
    max_requests: int | None = None  # sends at most this many (the sweep's request ceiling)
    deadline: float | None = None  # time.perf_counter() after which no answer is waited for
    progress_seconds: float = 10.0  # a progress line this often


def percentile(values: list[float], q: float) -> float | None:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def poisson_arrivals(rate_per_second: float, seconds: float, rng: random.Random) -> list[float]:
    """Send offsets (s) of a Poisson process at the rate, within [0, seconds)."""
    times, t = [], rng.expovariate(rate_per_second)
    while t < seconds:
        times.append(t)
        t += rng.expovariate(rate_per_second)
    return times


@dataclass
class StepResult:
    offered_rpm: float  # per instance, the schedule's rate
    achieved_rpm: float  # per instance, answered without error, over the step
    requests: int
    errors: int  # failed, shed requests not included
    error_percent: float
    ttft_p50_ms: float | None
    ttft_p95_ms: float | None
    ttft_p99_ms: float | None
    itl_p95_ms: float | None  # time per output token after the first, p95 over requests
    e2e_p95_ms: float | None
    output_tokens_per_s: float  # per instance
    send_lag_p99_ms: float | None
    mean_in_flight: float  # per instance, averaged over the step
    seconds: float
    held: bool = False
    verdict: str = ""
    prompt_tokens_p50: float | None = None  # as the engine counted them (usage), over answered requests
    prompt_tokens_p95: float | None = None
    # Tokens found in vLLM's prefix cache over tokens looked up, during the step (None: not exposed).
    prefix_cache_hit_percent: float | None = None
    # Conversations only: the unmeasured warm-up, first against later turns, and each group of turns.
    warmup_seconds: float = 0.0
    warmup_requests: int = 0
    ttft_first_turn_p95_ms: float | None = None
    ttft_later_turns_p95_ms: float | None = None
    trimmed_percent: float | None = None  # turns whose oldest exchanges were left out (prompt budget)
    by_turn: list[dict[str, Any]] | None = None
    shed: int = 0  # answered 429 by the admission check: a failure of the step, counted apart from errors
    shed_percent: float = 0.0
    # Answered without error with the first token within the objective of the scheduled send time (the
    # module's docstring); None when the step was summarised without an objective.
    answered_within_objective: int | None = None
    answered_within_objective_rpm: float | None = None  # per instance, per minute of the step's schedule

    def as_dict(self) -> dict[str, Any]:
        rounded = {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(self).items()}
        return rounded


def _ttft_ms(records: list[RequestRecord]) -> list[float]:
    return [(r.first - r.scheduled) * 1000.0 for r in records if r.first is not None]


def turn_groups(ok: list[RequestRecord]) -> list[dict[str, Any]]:
    """TTFT and prompt tokens of answered turns, by turn index (TURN_GROUPS); empty groups left out."""
    groups = []
    for low, high in TURN_GROUPS:
        chosen = [r for r in ok if r.turn is not None and r.turn >= low and (high is None or r.turn <= high)]
        if not chosen:
            continue
        ttft, prompts = _ttft_ms(chosen), [float(r.prompt_tokens) for r in chosen if r.prompt_tokens is not None]
        groups.append(
            {
                "turns": str(low) if high == low else f"{low}+" if high is None else f"{low}-{high}",
                "requests": len(chosen),
                "ttft_p50_ms": _rounded(percentile(ttft, 0.50)),
                "ttft_p95_ms": _rounded(percentile(ttft, 0.95)),
                "prompt_tokens_p50": percentile(prompts, 0.50),
                "prompt_tokens_p95": percentile(prompts, 0.95),
                "trimmed": sum(r.trimmed for r in chosen),
            }
        )
    return groups


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def conversation_figures(ok: list[RequestRecord], counted: list[RequestRecord]) -> dict[str, Any]:
    """StepResult's conversation fields; none when no record is a conversation's turn."""
    if not any(r.turn is not None for r in counted):
        return {}
    return {
        "ttft_first_turn_p95_ms": percentile(_ttft_ms([r for r in ok if r.turn == 1]), 0.95),
        "ttft_later_turns_p95_ms": percentile(_ttft_ms([r for r in ok if (r.turn or 0) > 1]), 0.95),
        "trimmed_percent": 100 * sum(r.trimmed for r in counted) / len(counted),
        "by_turn": turn_groups(ok),
    }


def summarise(
    records: list[RequestRecord],
    offered_rpm: float,
    instances: int,
    start: float,
    seconds: float,
    slo_ttft_ms: float | None = None,
) -> StepResult:
    """The step's figures over the records it counts (a conversation's warm-up turns are load, not
    measurement); requests in flight over every record that overlapped the step. `seconds` is the
    schedule's duration: every rate is per minute of it."""
    counted = [r for r in records if r.counted]
    ok = [r for r in counted if r.ok]
    ms = 1000.0
    ttft = _ttft_ms(ok)
    within = None if slo_ttft_ms is None else sum(t <= slo_ttft_ms for t in ttft)
    e2e = [(r.done - r.scheduled) * ms for r in ok]
    itl = [(r.done - r.first) * ms / (r.output_tokens - 1) for r in ok if r.output_tokens and r.output_tokens >= 2]
    lag = [max(0.0, r.sent - r.scheduled) * ms for r in counted if r.sent]
    prompts = [float(r.prompt_tokens) for r in ok if r.prompt_tokens is not None]
    end = start + seconds
    busy = sum(max(0.0, min(r.done or end, end) - max(r.scheduled, start)) for r in records)
    shed = sum(r.shed for r in counted)
    errors = len(counted) - len(ok) - shed
    return StepResult(
        offered_rpm=offered_rpm,
        achieved_rpm=len(ok) / seconds * 60 / instances,
        requests=len(counted),
        errors=errors,
        error_percent=100 * errors / len(counted) if counted else 0.0,
        ttft_p50_ms=percentile(ttft, 0.50),
        ttft_p95_ms=percentile(ttft, 0.95),
        ttft_p99_ms=percentile(ttft, 0.99),
        itl_p95_ms=percentile(itl, 0.95),
        e2e_p95_ms=percentile(e2e, 0.95),
        output_tokens_per_s=sum(r.output_tokens or 0 for r in ok) / seconds / instances,
        send_lag_p99_ms=percentile(lag, 0.99),
        mean_in_flight=busy / seconds / instances,
        seconds=seconds,
        prompt_tokens_p50=percentile(prompts, 0.50),
        prompt_tokens_p95=percentile(prompts, 0.95),
        warmup_requests=len(records) - len(counted),
        shed=shed,
        shed_percent=100 * shed / len(counted) if counted else 0.0,
        answered_within_objective=within,
        answered_within_objective_rpm=None if within is None else within / seconds * 60 / instances,
        **conversation_figures(ok, counted),
    )


def judge(step: StepResult, slo_ttft_ms: float) -> None:
    """Held: TTFT p95 within the objective, at most 1 % errors and nothing shed."""
    if step.requests == 0:
        step.held, step.verdict = False, "no request was sent"
    elif step.shed:
        step.held, step.verdict = False, f"{step.shed} shed (429: over the admission deadline)"
    elif step.error_percent > MAX_ERROR_PERCENT:
        step.held, step.verdict = False, f"errors {step.error_percent:.1f} % > {MAX_ERROR_PERCENT:g} %"
    elif step.ttft_p95_ms is None or step.ttft_p95_ms > slo_ttft_ms:
        shown = "none answered" if step.ttft_p95_ms is None else f"{step.ttft_p95_ms:.0f} ms"
        step.held, step.verdict = False, f"TTFT p95 {shown} > {slo_ttft_ms:g} ms"
    else:
        step.held, step.verdict = True, f"TTFT p95 {step.ttft_p95_ms:.0f} ms <= {slo_ttft_ms:g} ms"


async def run_step(
    target: Target,
    bodies: Iterator[dict[str, Any]],
    settings: StepSettings,
    stop: threading.Event,
    rng: random.Random,
    progress: Callable[[str], None],
) -> tuple[StepResult, list[RequestRecord]]:
    """Offers `settings.offered_rpm` per instance for `settings.seconds`, waits for the answers, summarises
    (with `slo_ttft_ms`, counting those answered within it). Sends at most `max_requests`, and stops waiting
    for answers at `deadline`."""
    seconds = settings.seconds
    rate = settings.offered_rpm * target.instances / 60
    offsets = poisson_arrivals(rate, seconds, rng)[: settings.max_requests]
    payloads = [json.dumps(next(bodies)).encode() for _ in offsets]  # encoded before the clock starts
    records: list[RequestRecord] = []
    tasks: list[asyncio.Task[None]] = []
    probe = CacheProbe(target)
    await probe.begin()
    start = time.perf_counter() + 0.05
    ticker = asyncio.create_task(report_progress(records, progress, settings.progress_seconds))
    try:
        for offset, payload in zip(offsets, payloads, strict=True):
            if stop.is_set():
                break
            while (delay := start + offset - time.perf_counter()) > 0 and not stop.is_set():
                await asyncio.sleep(min(delay, STOP_POLL_SECONDS))
            if stop.is_set():
                break
            record = RequestRecord(scheduled=start + offset)
            records.append(record)
            tasks.append(asyncio.create_task(target.request(payload, record, stop)))
        await settle(tasks, records, stop, time.perf_counter() + REQUEST_TIMEOUT_SECONDS, settings.deadline)
    finally:
        ticker.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, ticker, return_exceptions=True)
    elapsed = min(seconds, time.perf_counter() - start) if stop.is_set() else seconds
    step = summarise(records, settings.offered_rpm, target.instances, start, max(elapsed, 1e-3), settings.slo_ttft_ms)
    step.prefix_cache_hit_percent = await probe.hit_percent()
    return step, records


async def report_progress(records: list[RequestRecord], progress: Callable[[str], None], every: float) -> None:
    while True:
        await asyncio.sleep(every)
        done = [r for r in records if r.ok and r.counted]
        p95 = percentile(_ttft_ms(done), 0.95)
        shown = "-" if p95 is None else f"{p95:.0f} ms"
        progress(f"    {len(records)} sent, {len(done)} answered, TTFT p95 so far {shown}")


async def settle(
    tasks: list[asyncio.Task[None]], records: list[RequestRecord], stop: threading.Event, until: float,
    deadline: float | None,
) -> None:  # fmt: skip
    """Waits for the step's requests until `until` (or `deadline`, or a stop); what is still unanswered
    then is cancelled and recorded as an error (timeout or stopped)."""
    until = min(until, deadline) if deadline is not None else until
    pending = set(tasks)
    while pending and not stop.is_set() and time.perf_counter() < until:
        _, pending = await asyncio.wait(pending, timeout=STOP_POLL_SECONDS)
    for task in pending:
        task.cancel()
    if pending:
        for record in records:
            if record.done is None:
                reason = "stopped" if stop.is_set() else "timeout"
                record.error, record.done = record.error or reason, time.perf_counter()


class CacheProbe:
    """The prefix-cache hit rate over a step, from counters read at its start and after its answers,
    where the target exposes them (capacity.targets.UrlTarget.prefix_cache_counters)."""

    def __init__(self, target: Target) -> None:
        self.read = getattr(target, "prefix_cache_counters", None)
        self.before: tuple[float, float] | None = None

    async def begin(self) -> None:
        self.before = await self.read() if self.read is not None else None

    async def hit_percent(self) -> float | None:
        after = await self.read() if self.read is not None and self.before is not None else None
        if after is None or self.before is None or after[0] <= self.before[0]:
            return None
        return 100 * (after[1] - self.before[1]) / (after[0] - self.before[0])


async def sleep_until(when: float, stop: threading.Event) -> None:
    while (delay := when - time.perf_counter()) > 0 and not stop.is_set():
        await asyncio.sleep(min(delay, STOP_POLL_SECONDS))
