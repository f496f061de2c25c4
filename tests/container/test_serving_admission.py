"""Admission by projected wait (container/serving/admission.py): the estimate on its own, then the
middleware inside the stand-in engine (4 slots, 50 ms a token, a 2 s deadline) under a burst of 40
streamed 60-token requests, issue 41's "done when". Orderings and counts only, never durations: the
measured times are printed (-s) for the record."""

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from container.serving.admission import Admission
from container.serving.state import ServingState, StateRecord, write_state
from tests.container.test_serving_middleware import ERROR_SHAPE
from workbench.standin.burst import burst, percentile
from workbench.standin.harness import (
    PATIENCE_SECONDS,
    chat_body,
    free_port,
    serving_env,
    start_standin,
    wait_for_listening,
    wait_until,
)

SLOTS, TOKENS, TOKEN_SECONDS, DEADLINE_MS, BURST = 4, 60, 0.05, 2000, 40
PATHS = ("/invocations", "/v1/chat/completions", "/v1/completions")


# --- the estimate ----------------------------------------------------------------------------------


def busy(admission: Admission, requests: int) -> Admission:
    for _ in range(requests):
        admission.enter()
    return admission


def test_a_free_slot_is_always_admitted_and_no_deadline_means_no_check():
    assert busy(Admission(100, slots=4), 3).check() is None
    assert busy(Admission(None, slots=4), 1000).check() is None


def test_with_nothing_completed_yet_only_a_free_slot_admits():
    shed = busy(Admission(2000, slots=4), 4).check()
    assert shed is not None and shed.projected_wait_ms is None and shed.retry_after_seconds == 1
    assert "no request has completed yet" in shed.message


def test_the_queue_place_times_the_slot_interval_is_compared_with_the_deadline():
    admission = busy(Admission(2000, slots=4), 4)
    admission.observe(total_ms=3050, queue_ms=0, ttft_ms=50)  # a slot held 3.05 s, first token 50 ms in
    assert admission.check() is None  # place 1: 3050 / 4 = 762 ms + 50 ms
    admission.enter()
    assert admission.check() is None  # place 2: 1525 + 50 ms
    admission.enter()
    shed = admission.check()  # place 3: 2287.5 ms, over 2 s
    assert shed is not None and shed.projected_wait_ms == 2287.5 and shed.retry_after_seconds == 3
    assert "2.3 s (3 requests queued ahead)" in shed.message and admission.shed == 1
    assert shed.message.endswith("(Retry-After: 3)")  # the header does not reach InvokeEndpoint callers
    admission.leave()
    assert admission.check() is None and admission.shed == 1  # a slot freed: place 2 again


def test_queue_time_is_taken_out_of_the_slot_time_and_the_average_moves_toward_new_requests():
    admission = Admission(2000, slots=4)
    admission.observe(total_ms=5000, queue_ms=2000, ttft_ms=2100)
    assert (admission.slot_ms, admission.first_token_ms) == (3000, 100)
    admission.observe(total_ms=4000, queue_ms=0, ttft_ms=100)
    assert 3000 < admission.slot_ms < 4000 and admission.first_token_ms == 100


# --- inside the stand-in engine --------------------------------------------------------------------


class Engine:
    def __init__(self, port: int, process, state_file: Path) -> None:
        self.url, self.process = f"http://127.0.0.1:{port}", process
        self.client = httpx.Client(base_url=self.url, timeout=PATIENCE_SECONDS)
        write_state(str(state_file), StateRecord(ServingState.READY, "set by the test"))

    def stats(self) -> dict:
        return self.client.get("/_serving/stats").json()


def start_engine(workdir: Path) -> Engine:
    port = free_port()
    env = serving_env(
        workdir,
        port,
        STANDIN_TOKEN_INTERVAL=str(TOKEN_SECONDS),
        STANDIN_STARTUP_DELAY="0",
        SERVING_MAX_NUM_SEQS=str(SLOTS),
        SERVING_ADMISSION_DEADLINE_MS=str(DEADLINE_MS),
    )
    process = start_standin(workdir, env, port, middleware=True, extra=("--max-num-seqs", str(SLOTS)))
    wait_for_listening(port, process)
    return Engine(port, process, Path(env["SERVING_STATE_FILE"]))


@pytest.fixture
def engine(tmp_path):
    engine = start_engine(tmp_path)
    yield engine
    engine.process.stop()


def test_full_slots_shed_every_inference_route_streamed_or_not_but_never_ping_or_warmup(engine):
    """Cold (nothing completed yet), with every slot held by a stream: each route gets 429 in the error
    shape at once, while /ping answers and the supervisor's warmup is queued and served."""
    client = engine.client
    client.post("/_standin/mode", json={"mode": "hold", "hold_after_tokens": 1})
    with httpx.Client(base_url=engine.url, timeout=PATIENCE_SECONDS) as streams:
        held = [
            streams.send(
                streams.build_request("POST", "/v1/chat/completions", json=chat_body(stream=True)), stream=True
            )
            for _ in range(SLOTS)
        ]
        wait_until(lambda: engine.stats()["admission"]["load"] == SLOTS, "the held streams to take every slot")
        for path in PATHS:
            for stream in (False, True):
                body = (
                    {"prompt": "Hi", "max_tokens": 4, "stream": stream}
                    if path == "/v1/completions"
                    else chat_body(stream=stream)
                )
                refused = client.post(path, json=body)
                assert refused.status_code == 429, refused.text
                assert list(ERROR_SHAPE.iter_errors(refused.json())) == []
                assert refused.json()["error"]["type"] == "TooManyRequestsError"
                assert refused.headers["retry-after"] == "1" and refused.headers["x-request-id"]
        assert client.get("/ping").status_code == 200
        assert engine.stats()["shed"] == 2 * len(PATHS)
        # The warmup is admitted into the queue (load above the slots) while the slots are still held.
        with ThreadPoolExecutor(1) as pool:
            warmup = pool.submit(client.post, "/invocations", json=chat_body(), headers={"X-Serving-Warmup": "1"})
            wait_until(lambda: engine.stats()["admission"]["load"] == SLOTS + 1, "the warmup to be admitted")
            client.post("/_standin/release")
            assert warmup.result().status_code == 200
        for response in held:
            assert response.status_code == 200 and b"data: [DONE]" in response.read()  # admitted: never cut
    assert engine.stats()["shed"] == 2 * len(PATHS)
    wait_until(lambda: sum(1 for e in engine.process.events("request") if e["outcome"] == "shed") == 6, "the log lines")
    shed_lines = [e for e in engine.process.events("request") if e["outcome"] == "shed"]
    assert {e["status"] for e in shed_lines} == {429} and all("messages" not in str(e) for e in shed_lines)


def test_a_burst_over_capacity_is_shed_at_once_and_every_admitted_stream_completes(engine):
    # One wave first, so the instance has seen requests complete (as a serving instance has).
    wave = burst(engine.url, ["/v1/chat/completions"] * SLOTS, TOKENS)
    assert [a.status for a in wave] == [200] * SLOTS
    wait_until(lambda: engine.stats()["admission"]["slot_ms"] is not None, "the wave to teach the slot time")

    answers = burst(engine.url, [PATHS[i % len(PATHS)] for i in range(BURST)], TOKENS)
    admitted = [a for a in answers if a.status == 200]
    shed = [a for a in answers if a.status == 429]
    assert len(admitted) + len(shed) == BURST, sorted({a.status for a in answers})  # no 5xx, nothing else
    # Every slot admits; beyond them at most the places whose wait fits the deadline: a slot is held at
    # least TOKENS x TOKEN_SECONDS (3 s), so a place's wait is at least place x 3 s / 4 slots.
    most = SLOTS + math.floor(DEADLINE_MS / 1000 * SLOTS / (TOKENS * TOKEN_SECONDS))
    assert SLOTS <= len(admitted) <= most and shed
    # At once: every 429 is answered before the first admitted stream has finished (a slot freed).
    assert max(a.finished_at for a in shed) < min(a.finished_at for a in admitted)
    for a in shed:
        assert list(ERROR_SHAPE.iter_errors(a.error)) == [] and a.error["error"]["code"] == 429
        assert int(a.headers["retry-after"]) >= 1
    # Admitted streams run to the end: every token, the usage and [DONE].
    assert all(a.done and a.events == TOKENS and a.usage_tokens == TOKENS for a in admitted)
    assert engine.stats()["shed"] == len(shed)
    shed_ms = [1000 * a.finished_at for a in shed]
    ttft_ms = [1000 * a.first_token_at for a in admitted]
    print(
        f"\nstand-in burst: {len(admitted)} admitted, {len(shed)} shed; shed answered in {min(shed_ms):.0f}-"
        f"{max(shed_ms):.0f} ms (median {percentile(shed_ms, 50):.0f}); admitted TTFT p95 "
        f"{percentile(ttft_ms, 95):.0f} ms, max {max(ttft_ms):.0f} ms; admission {engine.stats()['admission']}"
    )
