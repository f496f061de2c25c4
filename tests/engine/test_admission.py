"""Admission by projected wait (container/serving/admission.py) on the real engine: vLLM's CPU build
behind the image's supervisor and middleware, 4 engine slots, a burst of 40 streamed requests over
every inference route with a 2 s deadline (issue 41, item 5). Orderings and counts only; the measured
times are printed (-s).

Scaled for the CPU build: the tiny random model decodes 4 sequences at about 5 ms a token here (a tenth
of the stand-in's 50 ms), so a request is 200 tokens instead of 60, which holds a slot about a
second: long enough that the burst overflows the queue the deadline allows, short enough for a quick
test. The test assumes no speed: a first wave of 4 requests teaches the instance its own slot time, as
traffic does on a serving instance, and on a machine so fast that 40 requests would all fit the
deadline's queue, the burst grows until they cannot."""

from __future__ import annotations

import math

import pytest
from engine_harness import launch

from tests.container.test_serving_middleware import ERROR_SHAPE
from workbench.standin.burst import burst, percentile
from workbench.standin.harness import wait_until

SLOTS, TOKENS, BURST, DEADLINE_MS = 4, 200, 40, 2000
PATHS = ("/invocations", "/v1/chat/completions", "/v1/completions")


@pytest.fixture(scope="module")
def serving(venv, model_dir, tmp_path_factory):
    instance = launch(
        tmp_path_factory,
        "admission",
        venv,
        model_dir,
        SERVING_MAX_NUM_SEQS=str(SLOTS),
        SERVING_ADMISSION_DEADLINE_MS=str(DEADLINE_MS),
    )
    instance.wait_ready()
    yield instance
    instance.close()


def test_a_burst_over_the_engines_capacity_is_shed_at_once_and_every_admitted_stream_completes(serving):
    url = str(serving.client.base_url)

    def admission() -> dict:
        return serving.client.get("/_serving/stats").json()["admission"]

    wave = burst(url, ["/v1/chat/completions"] * SLOTS, TOKENS)
    assert [a.status for a in wave] == [200] * SLOTS and all(a.usage_tokens == TOKENS for a in wave)
    slot_ms = wait_until(lambda: admission()["slot_ms"], "the wave to teach the slot time")
    # Issue 41's 40 requests, or more on a machine so fast that 40 would all fit the deadline's queue.
    size = max(BURST, SLOTS + math.ceil(DEADLINE_MS * SLOTS / slot_ms) + SLOTS)
    answers = burst(url, [PATHS[i % len(PATHS)] for i in range(size)], TOKENS)
    admitted = [a for a in answers if a.status == 200]
    shed = [a for a in answers if a.status == 429]
    assert len(admitted) + len(shed) == size, sorted({a.status for a in answers})  # no 5xx, nothing else
    assert len(admitted) >= SLOTS and shed
    # At once: every 429 before the first admitted stream has ended (before any slot freed).
    assert max(a.finished_at for a in shed) < min(a.finished_at for a in admitted)
    for a in shed:
        assert list(ERROR_SHAPE.iter_errors(a.error)) == [] and a.error["error"]["code"] == 429
        assert int(a.headers["retry-after"]) >= 1
    # Nothing admitted is lost: every stream runs to its last token, its usage and [DONE].
    assert all(a.done and a.usage_tokens == TOKENS for a in admitted)
    assert serving.client.get("/_serving/stats").json()["shed"] == len(shed)

    def shed_lines() -> list[dict] | None:
        lines = [e for e in serving.process.events("request") if e["outcome"] == "shed"]
        return lines if len(lines) == len(shed) else None

    lines = wait_until(shed_lines, "a log line per shed request")
    assert all(line["status"] == 429 and line["projected_wait_ms"] for line in lines)
    shed_ms = [1000 * a.finished_at for a in shed]
    ttft_ms = [1000 * a.first_token_at for a in admitted]
    print(
        f"\nCPU vLLM burst: slot time learned {slot_ms:.0f} ms; {len(admitted)} admitted, {len(shed)} shed; "
        f"shed answered in {min(shed_ms):.0f}-{max(shed_ms):.0f} ms (median {percentile(shed_ms, 50):.0f}); "
        f"admitted TTFT p95 {percentile(ttft_ms, 95):.0f} ms, max {max(ttft_ms):.0f} ms; admission {admission()}"
    )
