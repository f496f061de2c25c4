"""The engine core dies under load (SIGKILL, like a CUDA fault or the OOM killer): /ping stops saying 200
(503 while the API server still answers, then nothing listens), every stream in flight ends with an
error event or complete, and the container exits 5 so that SageMaker replaces it. Its own container:
the death ends it."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import httpx
from engine_harness import START_PATIENCE_SECONDS, command_line, descendants, stream_in_thread

from container.serving.supervisor import EXIT_ENGINE_DIED
from workbench.standin.harness import wait_until


def test_engine_core_killed_gives_503_error_events_and_exit_5(containers):
    serving = containers["engine-death"]
    serving.wait_ready()
    engine_cores = [pid for pid in descendants(serving.process.popen.pid) if "EngineCore" in command_line(pid)]
    assert len(engine_cores) == 1, [command_line(pid) for pid in descendants(serving.process.popen.pid)]

    results: dict = {}
    threads = [stream_in_thread(serving, f"dying-{index}", 1500, results) for index in range(2)]
    wait_until(lambda: len(results) == 2 and all(r["first"] for r in results.values()), "both streams started")
    os.kill(engine_cores[0], signal.SIGKILL)
    killed = time.monotonic()

    def ping_after_kill() -> int | str | None:
        try:
            status = serving.client.get("/ping").status_code
        except httpx.TransportError:  # vLLM's API server already shut down after its engine: nothing listens
            return "refused"
        return status if status != 200 else None

    answer = wait_until(ping_after_kill, "/ping to stop saying 200")
    # Reported by the test tier (not asserted: a shared machine's timing proves nothing).
    print(f"\n/ping said {answer} {time.monotonic() - killed:.2f} s after the engine core was killed")
    assert answer in (503, "refused")
    if answer == 503:
        with contextlib.suppress(httpx.TransportError):  # the API server may be gone by the next request
            assert serving.client.get("/ping").json()["status"] == "failed"
    for thread in threads:
        thread.join(START_PATIENCE_SECONDS)
    # No stream may end silently cut: each either carries an error event or was complete (every token
    # and [DONE]). On a quiet machine the engine can finish a stream before the kill lands (seen in CI:
    # the API server was still relaying tokens the engine had already made), so both outcomes occur.
    cut = 0
    for request_id, result in results.items():
        events = result["events"]
        if any(isinstance(e, dict) and "error" in e for e in events):
            cut += 1
            continue
        usage = next((e["usage"] for e in reversed(events) if isinstance(e, dict) and e.get("usage")), {})
        assert events[-1:] == ["[DONE]"] and usage.get("completion_tokens") == 1500, (
            f"{request_id} ended cut without an error event: {events[-3:]}"
        )
    print(f"{cut} of {len(results)} streams were cut by the engine's death and ended with an error event")
    assert serving.process.wait(START_PATIENCE_SECONDS) == EXIT_ENGINE_DIED
    statuses = serving.recorder.statuses()
    last_200 = len(statuses) - 1 - statuses[::-1].index(200)
    # After the last 200 the recorder saw 503 or nothing listening, never 200 again. Which of the two
    # comes first is a race with vLLM's own shutdown on a busy machine (CI saw "refused" first).
    assert statuses[last_200 + 1 :] and set(statuses[last_200 + 1 :]) <= {503, None}, statuses
