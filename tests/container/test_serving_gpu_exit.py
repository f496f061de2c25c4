"""A GPU check that keeps failing ends the container (issue 27): the supervisor as the image runs it, with
the stand-in engine and the fake nvidia-smi that fails while FAKE_GPU_FAIL_FILE exists (the same fault
injection as test_serving_supervisor.py). Before, the container answered /ping 503 for as long as the
fault lasted and never exited."""

import threading
import time
from pathlib import Path

import httpx
import pytest
from test_serving_supervisor import launch

from container.serving import contract as c
from container.serving.settings import Settings, SettingsError
from container.serving.supervisor import EXIT_GPU_FAILED
from workbench.standin.harness import PATIENCE_SECONDS, chat_body, free_port, serving_env, wait_until

UNHEALTHY_EXIT_SECONDS = 2


def ping_status(serving) -> str | None:
    try:
        return httpx.get(f"{serving.url}/ping", timeout=2.0).json()["status"]
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def test_a_gpu_that_stays_failed_drains_the_stream_in_flight_and_exits_non_zero(tmp_path_factory, capsys):
    serving = launch(
        tmp_path_factory,
        "gpu-exit",
        SERVING_WARMUP_REQUESTS="0",
        STANDIN_STARTUP_DELAY="0",
        SERVING_GPU_CHECK_INTERVAL_SECONDS="0.2",
        SERVING_UNHEALTHY_EXIT_SECONDS=str(UNHEALTHY_EXIT_SECONDS),
        SERVING_ENGINE_STALL_SECONDS="120",  # the held stream must not count as a hung engine here
    )
    try:
        serving.wait_ready()
        serving.mode("hold", hold_after_tokens=2)
        stream: dict = {}

        def one_stream() -> None:
            body = chat_body(stream=True, max_tokens=6)
            with httpx.stream("POST", f"{serving.url}/invocations", json=body, timeout=PATIENCE_SECONDS) as r:
                events = [line for line in r.iter_lines() if line.startswith("data: ")]
            stream.update(status=r.status_code, last=events[-1] if events else None)

        client = threading.Thread(target=one_stream, daemon=True)
        client.start()
        stats = f"{serving.url}/_serving/stats"
        wait_until(lambda: httpx.get(stats).json()["in_flight"] == 1, "the stream to be in flight")

        fault_started = time.monotonic()
        Path(serving.env["FAKE_GPU_FAIL_FILE"]).touch()
        wait_until(lambda: ping_status(serving) == "unhealthy", "/ping to say unhealthy")
        assert httpx.get(stats).json()["in_flight"] == 1  # unhealthy refuses new requests, keeps this one
        wait_until(lambda: ping_status(serving) == "failed", "/ping to say failed once the bound has passed")
        failed_after = time.monotonic() - fault_started
        refused = httpx.post(f"{serving.url}/invocations", json=chat_body(), timeout=5.0)
        assert refused.status_code == 503
        assert serving.process.popen.poll() is None  # draining: the stream in flight is still served
        httpx.post(f"{serving.url}/_standin/release", timeout=5.0)

        assert serving.process.wait() == EXIT_GPU_FAILED
        exited_after = time.monotonic() - fault_started
        client.join(PATIENCE_SECONDS)
        assert stream == {"status": 200, "last": "data: [DONE]"}
        states = [(e["state"], e["reason"]) for e in serving.process.events("state")]
        assert [state for state, _ in states[-3:]] == ["ready", "unhealthy", "failed"]
        assert "GPU check failing for" in states[-1][1]
        phases = [e["phase"] for e in serving.process.events("phase_finished")]
        assert phases[-2:] == ["drain", "stop_engine"]
        drain = next(e for e in serving.process.events("phase_finished") if e["phase"] == "drain")
        assert drain["in_flight_left"] == 0
        with capsys.disabled():
            print(
                f"\n[gpu-exit] bound {UNHEALTHY_EXIT_SECONDS} s, GPU checked every 0.2 s: /ping said failed "
                f"{failed_after:.2f} s after the fault, the container exited {EXIT_GPU_FAILED} "
                f"{exited_after:.2f} s after it (the drain waited for the held stream until the test released it)"
            )
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_a_gpu_that_stays_failed_with_nothing_in_flight_exits_non_zero(tmp_path_factory, capsys):
    serving = launch(
        tmp_path_factory,
        "gpu-exit-idle",
        SERVING_WARMUP_REQUESTS="0",
        STANDIN_STARTUP_DELAY="0",
        SERVING_GPU_CHECK_INTERVAL_SECONDS="0.2",
        SERVING_UNHEALTHY_EXIT_SECONDS=str(UNHEALTHY_EXIT_SECONDS),
    )
    try:
        serving.wait_ready()
        fault_started = time.monotonic()
        Path(serving.env["FAKE_GPU_FAIL_FILE"]).touch()
        assert serving.process.wait() == EXIT_GPU_FAILED
        exited_after = time.monotonic() - fault_started
        assert "unhealthy" in [body["status"] for status, body in serving.recorder.seen if status == 503]
        states = [e["state"] for e in serving.process.events("state")]
        assert states[-3:] == ["ready", "unhealthy", "failed"]
        drain = next(e for e in serving.process.events("phase_finished") if e["phase"] == "drain")
        assert drain["in_flight_left"] == 0
        with capsys.disabled():
            print(
                f"\n[gpu-exit-idle] bound {UNHEALTHY_EXIT_SECONDS} s, GPU checked every 0.2 s, nothing in flight: "
                f"exited {EXIT_GPU_FAILED} {exited_after:.2f} s after the fault"
            )
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_the_bound_defaults_to_the_contracts_and_must_be_positive(tmp_path):
    env = serving_env(tmp_path, free_port())
    env.pop(c.ENV_UNHEALTHY_EXIT_SECONDS, None)
    assert Settings.from_env(env).unhealthy_exit_seconds == c.DEFAULT_UNHEALTHY_EXIT_SECONDS
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({**env, c.ENV_UNHEALTHY_EXIT_SECONDS: "0"})
    assert refused.value.problems == [f"{c.ENV_UNHEALTHY_EXIT_SECONDS} must be > 0, got '0'"]
