"""One step of the sweep: open-loop Poisson arrivals at a fixed offered rate for a fixed time.

Requests are sent on their schedule whether or not earlier ones have answered, and every time is
measured from the scheduled send time, so a slow server (or a slow generator) cannot hide its queue:
closed-loop "N users" figures hide exactly the queueing autoscaling has to prevent. The generator's own
lag (actual send minus schedule) is reported so that a result it distorts can be refused.
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

from capacity.targets import REQUEST_TIMEOUT_SECONDS, RequestRecord

STOP_POLL_SECONDS = 0.2  # how soon Ctrl-C or SIGTERM stops a step
MAX_ERROR_PERCENT = 1.0  # the objective: at most 1 % errors (5xx, 4xx, stream errors, timeouts)


class Target(Protocol):
    instances: int

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None: ...


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
    errors: int
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

    def as_dict(self) -> dict[str, Any]:
        rounded = {k: round(v, 2) if isinstance(v, float) else v for k, v in asdict(self).items()}
        return rounded


def summarise(
    records: list[RequestRecord], offered_rpm: float, instances: int, start: float, seconds: float
) -> StepResult:
    ok = [r for r in records if r.ok]
    ms = 1000.0
    ttft = [(r.first - r.scheduled) * ms for r in ok]
    e2e = [(r.done - r.scheduled) * ms for r in ok]
    itl = [(r.done - r.first) * ms / (r.output_tokens - 1) for r in ok if r.output_tokens and r.output_tokens >= 2]
    lag = [max(0.0, r.sent - r.scheduled) * ms for r in records if r.sent]
    end = start + seconds
    busy = sum(max(0.0, min(r.done or end, end) - max(r.scheduled, start)) for r in records)
    errors = len(records) - len(ok)
    return StepResult(
        offered_rpm=offered_rpm,
        achieved_rpm=len(ok) / seconds * 60 / instances,
        requests=len(records),
        errors=errors,
        error_percent=100 * errors / len(records) if records else 0.0,
        ttft_p50_ms=percentile(ttft, 0.50),
        ttft_p95_ms=percentile(ttft, 0.95),
        ttft_p99_ms=percentile(ttft, 0.99),
        itl_p95_ms=percentile(itl, 0.95),
        e2e_p95_ms=percentile(e2e, 0.95),
        output_tokens_per_s=sum(r.output_tokens or 0 for r in ok) / seconds / instances,
        send_lag_p99_ms=percentile(lag, 0.99),
        mean_in_flight=busy / seconds / instances,
        seconds=seconds,
    )


def judge(step: StepResult, slo_ttft_ms: float) -> None:
    """Held: TTFT p95 within the objective and at most 1 % errors."""
    if step.requests == 0:
        step.held, step.verdict = False, "no request was sent"
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
    offered_rpm: float,
    seconds: float,
    stop: threading.Event,
    rng: random.Random,
    progress: Callable[[str], None],
    progress_seconds: float = 10.0,
    max_requests: int | None = None,
    deadline: float | None = None,
) -> tuple[StepResult, list[RequestRecord]]:
    """Offers `offered_rpm` per instance for `seconds`, waits for the answers, summarises. Sends at
    most `max_requests`, and stops waiting for answers at `deadline` (time.perf_counter())."""
    rate = offered_rpm * target.instances / 60
    offsets = poisson_arrivals(rate, seconds, rng)[:max_requests]
    payloads = [json.dumps(next(bodies)).encode() for _ in offsets]  # encoded before the clock starts
    records: list[RequestRecord] = []
    tasks: list[asyncio.Task[None]] = []
    start = time.perf_counter() + 0.05

    async def report_progress() -> None:
        while True:
            await asyncio.sleep(progress_seconds)
            done = [r for r in records if r.ok]
            p95 = percentile([(r.first - r.scheduled) * 1000 for r in done], 0.95)
            shown = "-" if p95 is None else f"{p95:.0f} ms"
            progress(f"    {len(records)} sent, {len(done)} answered, TTFT p95 so far {shown}")

    ticker = asyncio.create_task(report_progress())
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
        wait_until = time.perf_counter() + REQUEST_TIMEOUT_SECONDS
        wait_until = min(wait_until, deadline) if deadline is not None else wait_until
        pending = set(tasks)
        while pending and not stop.is_set() and time.perf_counter() < wait_until:
            _, pending = await asyncio.wait(pending, timeout=STOP_POLL_SECONDS)
        for task in pending:
            task.cancel()
            for record in records:
                if record.done is None:
                    reason = "stopped" if stop.is_set() else "timeout"
                    record.error, record.done = record.error or reason, time.perf_counter()
    finally:
        ticker.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, ticker, return_exceptions=True)
    elapsed = min(seconds, time.perf_counter() - start) if stop.is_set() else seconds
    return summarise(records, offered_rpm, target.instances, start, max(elapsed, 1e-3)), records
