"""One step of conversations: sessions run open-loop at a fixed offered rate for a fixed time.

Sessions arrive as a Poisson process at the offered rate divided by the mean turns per session, so turns
are offered at the step's rate. A session's first turn is sent at its arrival; turn k+1 is scheduled
think time after turn k's last answer token, since its content is that answer (a user answers what they
read). Every turn is sent at its scheduled time, whatever else is in flight, and timed from it; a slow
server delays only the later turns of the sessions it is slow for, as it delays their users, while new
sessions keep arriving on their own schedule. A step with a warm-up starts with the sessions a steady
stream has open (capacity.under_way), then runs `warmup_seconds` of the same process unmeasured, so
that when its window opens conversations are under way in the proportions of a steady stream and those
it started with have resumed; only turns scheduled inside the window are counted, and turns falling after it are not sent. A
turn that fails ends its session. The prefix-cache counters are read when the window opens and after its
answers (capacity.load.CacheProbe).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from workbench.loadtest.conversations import SessionPlan, SessionSource
from workbench.loadtest.load import (
    CacheProbe,
    StepResult,
    StepSettings,
    Target,
    poisson_arrivals,
    report_progress,
    settle,
    sleep_until,
    summarise,
)
from workbench.loadtest.targets import REQUEST_TIMEOUT_SECONDS, RequestRecord
from workbench.loadtest.under_way import under_way


@dataclass
class Conversations:
    """One conversation step's shared state: where its window starts and ends, what was sent."""

    target: Target
    source: SessionSource
    stop: threading.Event
    window: float  # time.perf_counter() at which the measured window opens
    end: float
    allowed: float  # requests the step may still send (the sweep's ceiling)
    records: list[RequestRecord]

    async def converse(
        self, plan: SessionPlan, at: float, first: int = 0, history: list[dict[str, str]] | None = None
    ) -> None:
        """One session from turn `first` after `history` (a session under way: its earlier exchanges as
        the workload writes them): each turn at its time, the answer kept for the next; ends at the
        window's end, on a failed turn, on a stop, or when the step's requests are spent."""
        history = list(history or [])
        last = len(plan.turns) - 1
        for index in range(first, len(plan.turns)):
            if at >= self.end or self.stop.is_set() or len(self.records) >= self.allowed:
                return
            await sleep_until(at, self.stop)
            if self.stop.is_set():
                return
            body, trimmed = self.source.workload.request(plan, history, index)
            record = RequestRecord(scheduled=at, turn=index + 1, counted=at >= self.window, trimmed=trimmed,
                                   keep_answer=index < last, resumed=index == first > 0)  # fmt: skip
            self.records.append(record)
            await self.target.request(json.dumps(body).encode(), record, self.stop)
            if not record.ok or record.done is None or index == last:
                return
            history += [body["messages"][-1], {"role": "assistant", "content": record.answer or ""}]
            at = record.done + plan.thinks[index]


async def run_conversation_step(
    target: Target,
    source: SessionSource,
    settings: StepSettings,
    stop: threading.Event,
    rng: random.Random,
    progress: Callable[[str], None],
) -> tuple[StepResult, list[RequestRecord]]:
    """Sessions at `offered_rpm` / mean turns per instance for `warmup_seconds` unmeasured, then for
    `seconds` measured (the module's docstring); waits for the answers, summarises the window."""
    offered_rpm, seconds, warmup_seconds = settings.offered_rpm, settings.seconds, settings.warmup_seconds
    session_rate = offered_rpm * target.instances / 60 / source.workload.mean_turns
    arrivals = [offset - warmup_seconds for offset in poisson_arrivals(session_rate, warmup_seconds + seconds, rng)]
    plans = [next(source.plans) for _ in arrivals]  # drawn before the clock starts
    horizon = source.workload.steady.horizon_seconds
    resumed = under_way(source.plans, session_rate, horizon, rng) if warmup_seconds else []
    pasts = [source.workload.history(session.plan, session.turn) for session in resumed]  # before the clock too
    window = time.perf_counter() + 0.05 + warmup_seconds
    allowed = float("inf") if settings.max_requests is None else settings.max_requests
    step = Conversations(target, source, stop, window, window + seconds, allowed, [])
    tasks: list[asyncio.Task[None]] = []
    probe = CacheProbe(target)
    ticker = asyncio.create_task(report_progress(step.records, progress, settings.progress_seconds))
    opened = asyncio.create_task(_open_window(probe, window, stop))
    try:
        for session, past in zip(resumed, pasts, strict=True):  # each sleeps until its next turn is due
            at = window - warmup_seconds + session.delay
            tasks.append(asyncio.create_task(step.converse(session.plan, at, session.turn, past)))
        for arrival, plan in zip(arrivals, plans, strict=True):
            await sleep_until(window + arrival, stop)
            if stop.is_set() or len(step.records) >= allowed:
                break
            tasks.append(asyncio.create_task(step.converse(plan, window + arrival)))
        await sleep_until(step.end, stop)
        await settle(tasks, step.records, stop, step.end + REQUEST_TIMEOUT_SECONDS, settings.deadline)
        await opened
    finally:
        ticker.cancel()
        for task in [*tasks, opened]:
            task.cancel()
        await asyncio.gather(*tasks, ticker, opened, return_exceptions=True)
    elapsed = min(seconds, max(time.perf_counter() - window, 0.0)) if stop.is_set() else seconds
    result = summarise(step.records, offered_rpm, target.instances, window, max(elapsed, 1e-3), settings.slo_ttft_ms)
    result.warmup_seconds = warmup_seconds
    result.prefix_cache_hit_percent = await probe.hit_percent()
    return result, step.records


async def _open_window(probe: CacheProbe, window: float, stop: threading.Event) -> None:
    await sleep_until(window, stop)
    await probe.begin()
