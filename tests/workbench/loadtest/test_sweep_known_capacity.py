"""The sweep against an engine whose capacity is known by construction: SLOTS requests at once, each
holding its slot for TOKENS tokens. The answer must land near the rate at which TTFT p95 reaches the
objective under Poisson arrivals (computed here by simulating that queue), and clearly below the raw
ceiling SLOTS / hold."""

from __future__ import annotations

import heapq
import json
import math
import random
import subprocess
import sys
import time

import httpx
import pytest
from capacity_harness import start_engine

from workbench.loadtest.load import percentile

pytestmark = pytest.mark.slow  # a long end-to-end run: `make test-slow` (CI runs it)

SLOTS, TOKENS, TOKEN_INTERVAL, SLO_MS = 4, 25, 0.01, 150.0
REPO = __import__("pathlib").Path(__file__).resolve().parents[3]


def simulated_ttft_p95(rate: float, slots: int, hold: float, first: float, arrivals: int, seed: int) -> float:
    """M/D/c: Poisson arrivals, `slots` servers, each request holding one for `hold` seconds; its first
    token comes `first` after it gets a slot."""
    rng, t, free, ttft = random.Random(seed), 0.0, [0.0] * slots, []
    for _ in range(arrivals):
        t += rng.expovariate(rate)
        start = max(t, heapq.heappop(free))
        heapq.heappush(free, start + hold)
        ttft.append(start - t + first)
    return percentile(ttft, 0.95)


def rate_at_objective(slots: int, hold: float, first: float, slo: float) -> float:
    """The arrival rate (per second) at which the simulated TTFT p95 reaches the objective."""
    low, high = 0.01, slots / hold
    for _ in range(30):
        mid = (low + high) / 2
        p95 = sorted(simulated_ttft_p95(mid, slots, hold, first, 20_000, seed) for seed in range(3))[1]
        low, high = (mid, high) if p95 <= slo else (low, mid)
    return low


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    url, process = start_engine(tmp_path_factory.mktemp("known"), SLOTS, TOKEN_INTERVAL)
    yield url
    process.stop()


def measured_first(url: str) -> float:
    """Seconds from sending a request alone to its first byte (median of five), as the engine really answers them
    here: its first token one interval after the slot, and the HTTP hops and middleware around it. One client,
    its connection opened by an unmeasured request first: building a client (an SSL context) is no part of it."""
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": TOKENS, "ignore_eos": True, "stream": True}
    firsts = []
    with httpx.Client(timeout=30) as client:
        for _ in range(6):
            sent, first = time.perf_counter(), None
            with client.stream("POST", f"{url}/invocations", json=body) as answer:
                for line in answer.iter_lines():
                    first = first or (time.perf_counter() if line.startswith("data: ") else None)
            firsts.append(first - sent)
    return sorted(firsts[1:])[2]


def test_the_answer_is_near_the_queue_s_rate_at_the_objective_and_below_the_ceiling(engine, fixed_workload, tmp_path):
    # The slot is held TOKENS intervals by construction: the stand-in paces its tokens by the clock
    # (capacity_harness.py), so a busy machine does not lengthen it (paced by sleeps, a hold measured alone on a
    # busy machine came out 400-580 ms for these 250, and the model's rate with it 40 % low).
    hold, first = TOKENS * TOKEN_INTERVAL, measured_first(engine)
    ceiling_rpm = SLOTS / hold * 60
    expected_rpm = rate_at_objective(SLOTS, hold, first, SLO_MS / 1000) * 60
    out = tmp_path / "out"
    # This judges the answer against the queue model; the generator's own lag has its benchmark
    # (workbench/benchmarks/capacity_generator.py), and a shared CI machine can stall it for a moment.
    run = subprocess.run(
        [sys.executable, "-m", "workbench.loadtest", "--url", engine, "--slo-ttft-ms", str(SLO_MS),
         "--step-seconds", "6", "--start-rpm", str(round(expected_rpm * 0.4)), "--max-rpm", str(round(ceiling_rpm * 1.5)),
         "--workload", str(fixed_workload), "--out", str(out), "--max-minutes", "4", "--max-send-lag-ms", "200"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((out / "capacity.json").read_text())
    answer = record["requests_per_minute_per_instance"]
    best = record["steps"][record["answer_step"] - 1]  # the held step that answered the most within the objective
    print(
        f"\nhold {hold * 1000:.0f} ms, first byte {first * 1000:.0f} ms, ceiling {ceiling_rpm:.0f}/min, queue model {expected_rpm:.0f}/min, answer "
        f"{answer:.0f}/min answered at {best['offered_rpm']:.0f}/min offered"
    )
    # The search found the rate at the objective: judged on the rate it offered there...
    assert 0.65 * expected_rpm <= best["offered_rpm"] <= 1.3 * expected_rpm, (best, expected_rpm, run.stdout)
    # ... and the answer is what that step answered within the objective, whose count swings with its
    # Poisson arrivals (about 30 in a 6 s step: ±18 % a standard deviation) around the rate offered.
    assert best["held"] and answer == pytest.approx(best["answered_within_objective_rpm"], abs=0.05)
    assert answer < 0.9 * ceiling_rpm
    assert any(not step["held"] for step in record["steps"]) and record["complete"]
    # Little's law at the answer: in flight = rate x time in the system, within the step's noise.
    assert record["concurrent_requests_per_instance_at_slo"] == pytest.approx(best["mean_in_flight"], abs=0.1)
    assert math.isclose(best["mean_in_flight"], best["achieved_rpm"] / 60 * hold, rel_tol=0.5)
    assert (out / "capacity.md").exists() and (out / "capacity.png").stat().st_size > 10_000
