"""The answer is what was answered within the objective, never what was offered (issue 40, item 4).

Against the stand-in engine behind the serving middleware (capacity_harness.py): conversations whose
answers take 2 s while users think 0.1 s send their next turns late (a turn follows its answer), so a
4 s step sends far fewer turns than its offered rate and the server answers fewer than offered, every
one of them fast. Before this change that step's answer was the offered rate ("at least 600").

Without a server: a target whose chosen requests miss the objective while the step's p95 holds, so
the count answered within it follows from the test's numbers; and the exact step counts after a stop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

from capacity_harness import FIXED_WORKLOAD, start_engine

from workbench.loadtest.report import RunFacts, markdown, steps_text, write
from workbench.loadtest.sweep import SweepOutcome, SweepSettings, sweep
from workbench.loadtest.targets import RequestRecord

REPO = Path(__file__).resolve().parents[3]
SLO_MS = 500.0
OFFERED = 600  # per minute: 40 turns in a 4 s step at the schedule's rate
SLOW_ANSWERS = (
    FIXED_WORKLOAD
    + """\
conversation:
  turns: {distribution: geometric, mean: 4.2, max: 35}
  think_seconds: {median: 0.1, sigma: 0, min: 0.1, max: 0.1}
  context_budget_tokens: 3496
"""
)


def test_a_server_answering_fewer_than_offered_gets_the_answered_rate_as_its_answer(tmp_path):
    workload = tmp_path / "slow-answers.yaml"
    workload.write_text(SLOW_ANSWERS)
    url, engine = start_engine(tmp_path / "engine", slots=64, token_interval=0.08)  # 25 tokens: 2 s an answer
    out = tmp_path / "out"
    try:
        run = subprocess.run(
            [sys.executable, "-m", "workbench.loadtest", "--url", url, "--slo-ttft-ms", str(SLO_MS), "--step-seconds", "4",
             "--warmup-seconds", "0", "--start-rpm", str(OFFERED), "--max-rpm", str(OFFERED), "--max-minutes", "1",
             "--max-send-lag-ms", "1000", "--workload", str(workload), "--out", str(out)],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        engine.stop()
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((out / "capacity.json").read_text())
    (step,) = record["steps"]
    assert step["result"] == "held" and record["stopped"] == "max rate held"
    # Each session sends a turn at its arrival and the next 2.1 s later: at most two in the window.
    assert step["answered_within_objective_rpm"] < 0.7 * OFFERED, step
    # The answer is the count answered within the objective per minute of the 4 s schedule...
    answered = step["answered_within_objective"] / 4 * 60
    assert record["requests_per_minute_per_instance"] == round(answered, 1) and record["answer_step"] == 1
    # ... and the command says it, as a lower bound (the one rate offered held), per step and at the end.
    assert (
        f"offered {OFFERED}/min: {step['requests']} requests, {step['answered_within_objective']} answered "
        in run.stdout
    )
    assert f"answer: at least {answered:,.0f} requests/min per instance" in run.stdout
    assert f"at least {OFFERED}" not in run.stdout + (out / "capacity.md").read_text()
    print(
        f"\noffered {OFFERED}/min, {step['requests']} requests, answer {record['requests_per_minute_per_instance']}/min"
    )


class MissesEvery(list[RequestRecord]):
    """A target that answers at once, except every `nth` request, whose first token comes after the
    objective; it sets `stop` (as Ctrl-C would) after `stop_after` requests."""

    instances = 1

    def __init__(self, nth: int, stop_after: int | None = None) -> None:
        super().__init__()
        self.nth, self.stop_after = nth, stop_after

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        self.append(record)
        late = len(self) % self.nth == 0
        record.sent, record.first = record.scheduled, record.scheduled + (1.0 if late else 0.01)
        record.done, record.status, record.output_tokens = record.first + 0.01, 200, 10
        if self.stop_after is not None and len(self) >= self.stop_after:
            stop.set()


def run(target: MissesEvery, on_step=lambda _: None) -> tuple[SweepOutcome, list[str]]:
    """0.5 s steps at 6,000/min (about 50 requests each), up to 12,000/min."""
    settings = SweepSettings(slo_ttft_ms=SLO_MS, step_seconds=0.5, max_minutes=1, start_rpm=6000, max_rpm=12000)
    lines: list[str] = []
    stop = threading.Event()
    outcome = asyncio.run(
        sweep(target, itertools.repeat({"prompt": "hi"}), settings, stop, lines.append, on_step=lambda o: on_step(stop))
    )
    return outcome, lines


def facts() -> RunFacts:
    return RunFacts({"kind": "url", "url": "http://h"}, 1, SLO_MS, {"source": "test"}, datetime.now(UTC), {})


def test_requests_past_the_objective_are_not_counted_in_the_answer(tmp_path):
    target = MissesEvery(nth=25)  # 4 % late: the step's p95 holds, those requests were not answered in time
    outcome, lines = run(target, on_step=lambda stop: stop.set())  # one step, then a stop between steps
    (step,) = outcome.steps
    late = sum(r.first - r.scheduled > SLO_MS / 1000 for r in target)
    assert late >= 1 and step.requests == len(target) and outcome.results == ["held"]
    assert step.answered_within_objective == len(target) - late
    assert outcome.answer_rpm == step.answered_within_objective_rpm == (len(target) - late) / 0.5 * 60
    record = write(outcome, facts(), tmp_path, drawn=False)
    # Stopped between steps: the one step measured, none partial.
    assert (record["steps_measured"], record["steps_partial"], steps_text(record)) == (1, 0, "1 step(s) measured")
    assert f"| 1 | 6,000 | {step.answered_within_objective_rpm:,.0f} | " in markdown(record)
    assert any(
        line.startswith(f"  offered 6,000/min: {len(target)} requests, {len(target) - late} answered") for line in lines
    )


def test_a_step_cut_short_is_partial_and_counted_apart(tmp_path):
    outcome, lines = run(MissesEvery(nth=1000, stop_after=60))  # step 1 (~50 requests) held, step 2 cut short
    assert outcome.results == ["held", "interrupted"] and outcome.stopped == "interrupted"
    assert len(outcome.measured) == 1 and len(outcome.partial) == 1
    assert outcome.answer_rpm == outcome.steps[0].answered_within_objective_rpm  # the partial step never counts
    record = write(outcome, facts(), tmp_path, drawn=False)
    assert steps_text(record) == "1 step(s) measured, 1 partial (interrupted, not judged)"
    second = f"{outcome.steps[1].offered_rpm:,.0f}"
    assert f"| 2 (partial) | {second} |" in markdown(record)
    assert any(line.startswith(f"  offered {second}/min (partial: ") for line in lines)
