"""Each step of a sweep is labelled for what it measured: held or broke (the server against the
objective), client-limited (the generator could not send on schedule) or interrupted; capacity.png's
title names the target and marks a partial sweep and a lower-bound answer.

The target here answers at once with times the test chooses (how late each request was sent, how
long to its first token), so every label follows from the test's numbers, not from the machine."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from workbench.loadtest.report import RunFacts, figure, title, write
from workbench.loadtest.sweep import SweepOutcome, SweepSettings, sweep
from workbench.loadtest.targets import RequestRecord

SLO_MS = 500.0
VARIANT = {"kind": "sagemaker", "environment": "staging", "endpoint": "mangaassist-llm-staging", "variant": "canary"}


class ChosenTimes:
    """A target whose every answer has the given send lag and time to first token (seconds); it sets
    `stop` (as Ctrl-C would) once `stop_after` requests were sent."""

    instances = 1

    def __init__(self, lag: float = 0.0, ttft: float = 0.02, stop_after: int | None = None) -> None:
        self.lag, self.ttft, self.stop_after, self.sent = lag, ttft, stop_after, 0

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        record.sent = record.scheduled + self.lag
        record.first = record.scheduled + self.ttft
        record.done, record.status, record.output_tokens = record.first + 0.01, 200, 10
        self.sent += 1
        if self.stop_after is not None and self.sent >= self.stop_after:
            stop.set()


class FirstThreeFail(ChosenTimes):
    """Its first three requests fail, one of each kind: a read timeout, an HTTP 500, a 200 without a token."""

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        await super().request(body, record, stop)
        failures = {1: ("ReadTimeout", 200), 2: ("HTTP 500", 500), 3: (None, 200)}
        if self.sent in failures:
            (record.error, record.status), record.first = failures[self.sent], None


def run(target: ChosenTimes, max_rpm: float = 6000) -> tuple[SweepOutcome, list[str]]:
    """One or two 0.2 s steps at 6,000/min (about 20 requests each)."""
    settings = SweepSettings(slo_ttft_ms=SLO_MS, step_seconds=0.2, max_minutes=1, start_rpm=6000, max_rpm=max_rpm)
    lines: list[str] = []
    outcome = asyncio.run(sweep(target, itertools.repeat({"prompt": "hi"}), settings, threading.Event(), lines.append))
    return outcome, lines


def facts(target: dict[str, Any] = VARIANT) -> RunFacts:
    return RunFacts(target, 1, SLO_MS, {"source": "test"}, datetime(2026, 11, 25, 3, 0, tzinfo=UTC), {})


def step_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("  ") and "requests," in line]


def test_a_step_the_generator_could_not_send_on_schedule_is_client_limited_not_held(tmp_path):
    outcome, lines = run(ChosenTimes(lag=0.2))  # 200 ms late, answers well within the objective
    assert outcome.results == ["client-limited"]
    (line,) = step_lines(lines)
    assert line.endswith(
        "client-limited (send lag p99 200 ms > 50 ms: the generator could not send on schedule, so the step "
        "measured the client (the server's figures: held: TTFT p95 20 ms <= 500 ms))"
    )
    assert outcome.held == [] and outcome.answer_rpm is None and outcome.stopped.startswith("the generator fell behind")
    record = write(outcome, facts(), tmp_path)
    assert [(s["result"], s["held"]) for s in record["steps"]] == [("client-limited", False)]
    assert "| client-limited (send lag p99 200 ms > 50 ms" in (tmp_path / "capacity.md").read_text()


def test_an_interrupted_step_is_interrupted_not_broke(tmp_path):
    outcome, lines = run(ChosenTimes(stop_after=3))
    assert outcome.results == ["interrupted"] and outcome.stopped == "interrupted"
    (line,) = step_lines(lines)
    assert line.endswith(": interrupted") and "broke" not in line
    record = write(outcome, facts(), tmp_path)
    assert record["steps"][0]["result"] == "interrupted"
    assert "| interrupted |" in (tmp_path / "capacity.md").read_text()


def test_held_and_broke_judge_the_server():
    assert run(ChosenTimes(ttft=0.02))[0].results == ["held"]  # max rate held: one step
    outcome, lines = run(ChosenTimes(ttft=0.8))
    assert outcome.results == ["broke"]
    assert step_lines(lines)[0].endswith(": broke (TTFT p95 800 ms > 500 ms)")


def test_a_step_broken_by_errors_says_their_kinds(tmp_path):
    outcome, lines = run(FirstThreeFail())
    assert outcome.results == ["broke"]
    kinds = "1 ReadTimeout, 1 HTTP 500, 1 answered 200 without a token"
    (line,) = step_lines(lines)
    assert f", errors 3 ({kinds}), shed 0," in line and line.endswith(f" % > 1 % ({kinds}))")
    record = write(outcome, facts(), tmp_path)
    assert record["steps"][0]["errors_by_kind"] == {"ReadTimeout": 1, "HTTP 500": 1, "answered 200 without a token": 1}
    assert f"% > 1 % ({kinds})) |" in (tmp_path / "capacity.md").read_text()
    assert run(ChosenTimes())[0].steps[0].errors_by_kind == {}


def record(answer: float | None, stopped: str, target: dict[str, Any] = VARIANT) -> dict[str, Any]:
    step = {"offered_rpm": 300.0, "achieved_rpm": 290.0, "ttft_p50_ms": 200.0, "ttft_p95_ms": 400.0}
    return {
        "requests_per_minute_per_instance": answer,
        "complete": stopped in ("refined", "max rate held"),
        "stopped": stopped,
        "slo": {"ttft_p95_ms": SLO_MS},
        "target": target,
        "measured_at": "2026-11-25T03:00:00+00:00",
        "steps": [step],
    }


@pytest.mark.parametrize(
    ("answer", "stopped", "target", "expected"),
    [
        (400.0, "refined", VARIANT,
         "Capacity of staging/canary (mangaassist-llm-staging): 400 requests/min per instance\n"
         "measured 2026-11-25T03:00:00+00:00"),
        (300.0, "interrupted", VARIANT,
         "Capacity of staging/canary (mangaassist-llm-staging): at least 300 requests/min per instance\n"
         "PARTIAL: the sweep ended early (interrupted); LOWER BOUND\nmeasured 2026-11-25T03:00:00+00:00"),
        (None, "time budget (--max-minutes 2) spent before the search finished", {"kind": "url", "url": "http://h:8080"},
         "Capacity of http://h:8080: no rate held the objective\nPARTIAL: the sweep ended early (time budget "
         "(--max-minutes 2) spent before the search finished)\nmeasured 2026-11-25T03:00:00+00:00"),
        (300.0, "refined", {**VARIANT, "stand_in": "the sandbox's stand-in engine serves its variants"},
         "Capacity of staging/canary (mangaassist-llm-staging): 300 requests/min per instance\n"
         "SANDBOX STAND-IN, not an instance type\nmeasured 2026-11-25T03:00:00+00:00"),
        (3600.0, "max rate held", VARIANT,
         "Capacity of staging/canary (mangaassist-llm-staging): at least 3,600 requests/min per instance\n"
         "LOWER BOUND (the highest rate offered held)\nmeasured 2026-11-25T03:00:00+00:00"),
    ],
)  # fmt: skip
def test_the_png_title_names_the_target_and_marks_partial_and_lower_bound_answers(answer, stopped, target, expected):
    import matplotlib.pyplot as plt

    measured = record(answer, stopped, target)
    assert title(measured) == expected
    drawn = figure(measured)
    try:
        assert drawn.axes[0].get_title() == expected  # what capacity.png shows
    finally:
        plt.close(drawn)


def test_capacity_json_keeps_each_step_s_result(tmp_path):
    outcome, _ = run(ChosenTimes(ttft=0.02))
    write(outcome, facts(), tmp_path)
    assert json.loads((tmp_path / "capacity.json").read_text())["steps"][0]["result"] == "held"
