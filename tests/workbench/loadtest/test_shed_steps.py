"""`bin/loadtest` and the serving image's admission check: a request answered 429 (shed) is counted
apart from errors and fails the step, however fast its answer came (issue 41, item 4)."""

from __future__ import annotations

import asyncio
import random
import threading

from capacity_harness import start_engine

from workbench.loadtest.load import StepSettings, judge, run_step, summarise
from workbench.loadtest.targets import RequestRecord, UrlTarget


def record(status: int, first: float | None, error: str | None = None) -> RequestRecord:
    return RequestRecord(scheduled=0.0, sent=0.0, first=first, done=1.0, status=status, error=error, output_tokens=10)


def test_a_shed_request_is_counted_apart_from_errors_and_fails_the_step():
    answered = [record(200, 0.1) for _ in range(97)]
    step = summarise([*answered, record(500, None, "HTTP 500"), record(429, None, "HTTP 429")], 60, 1, 0.0, 60, 500)
    assert (step.requests, step.errors, step.shed) == (99, 1, 1)
    assert step.answered_within_objective == 97  # neither the error nor the shed request: never a fast answer
    assert round(step.error_percent, 2) == round(step.shed_percent, 2) == round(100 / 99, 2)
    judge(step, slo_ttft_ms=500)  # TTFT p95 100 ms and 1 % errors would hold; the shed request does not
    assert not step.held and step.verdict == "1 shed (429: over the admission deadline)"
    assert "shed" in step.as_dict() and step.ttft_p95_ms == 100.0  # the 429 is no fast answer in TTFT


def test_a_step_over_the_instances_capacity_reports_the_shed_requests(tmp_path):
    """The stand-in with 2 slots and a 1 s deadline, offered far more than it serves."""
    overrides = {"SERVING_MAX_NUM_SEQS": "2", "SERVING_ADMISSION_DEADLINE_MS": "1000"}
    url, engine = start_engine(tmp_path / "engine", slots=2, token_interval=0.02, **overrides)
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 25, "stream": True}
    try:

        async def step():
            target = UrlTarget(url)
            await target.open()
            try:
                bodies = iter(lambda: body, None)
                settings = StepSettings(1200, 3, slo_ttft_ms=60_000)
                return await run_step(target, bodies, settings, threading.Event(), random.Random(1), lambda _: None)
            finally:
                await target.close()

        result, records = asyncio.run(step())
    finally:
        engine.stop()
    assert result.shed == sum(r.status == 429 for r in records) > 0
    assert result.errors == 0 and all(r.ok or r.shed for r in records)
    # However fast its 429 came, a shed request is not answered within even a 60 s objective.
    assert result.answered_within_objective == result.requests - result.shed
    judge(result, slo_ttft_ms=60_000)
    assert not result.held and result.verdict.endswith("shed (429: over the admission deadline)")
