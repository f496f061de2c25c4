"""The supervisor as the image runs it (`python -m serving.supervisor serve`), with the stand-in engine
behind a fake `vllm` on PATH and a fake `nvidia-smi`: phases, readiness, warmup, metrics, GPU checks,
SIGTERM with streams in flight, engine death and every start-up failure."""

import asyncio
import json
import os
import signal
from pathlib import Path

import httpx
import pytest
from emf_check import emf_problems

from container.serving import contract as c
from container.serving.supervisor import (
    EXIT_ENGINE_DIED,
    EXIT_ENGINE_START_FAILED,
    EXIT_INVALID_ENVIRONMENT,
    EXIT_OK,
    EXIT_WARMUP_FAILED,
)
from container.serving.warmup import warmup_plan
from workbench.standin.harness import (
    ADAPTERS,
    PATIENCE_SECONDS,
    PingRecorder,
    chat_body,
    free_port,
    http_status,
    serving_env,
    start_supervisor,
    wait_until,
)


class Serving:
    def __init__(self, workdir: Path, port: int, env: dict[str, str], recorder: PingRecorder) -> None:
        self.workdir, self.port, self.env, self.recorder = workdir, port, env, recorder
        self.url = f"http://127.0.0.1:{port}"
        self.process = start_supervisor(workdir, env)
        recorder.start()

    def ping(self) -> int | None:
        return http_status(f"{self.url}/ping")

    def wait_ready(self) -> None:
        def ready() -> bool:
            if self.process.popen.poll() is not None:
                raise AssertionError(f"supervisor exited early:\n{self.process.output()[-4000:]}")
            return self.ping() == 200

        wait_until(ready, "/ping to say 200")

    def mode(self, mode: str, **extra) -> None:
        response = httpx.post(f"{self.url}/_standin/mode", json={"mode": mode, **extra}, timeout=5.0)
        assert response.status_code == 200


def launch(tmp_path_factory, name: str, **overrides: str) -> Serving:
    workdir = tmp_path_factory.mktemp(name)
    port = free_port()
    env = serving_env(workdir, port, **overrides)
    return Serving(workdir, port, env, PingRecorder(port))


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """One production-like container for the module; the last test sends it SIGTERM."""
    instance = launch(
        tmp_path_factory,
        "supervisor",
        STANDIN_STARTUP_DELAY="1.0",
        STANDIN_TOKEN_INTERVAL="0.02",  # slow enough that warmup is visibly a phase of its own
        SERVING_GPU_CHECK_INTERVAL_SECONDS="0.2",
    )
    instance.wait_ready()
    wait_until(lambda: 200 in instance.recorder.statuses(), "the /ping recorder to see 200")
    yield instance
    instance.recorder.running = False
    instance.process.stop()


def test_ping_refuses_while_the_model_loads_then_503_while_warming_then_200(serving):
    statuses = serving.recorder.statuses()
    first_503, first_200 = statuses.index(503), statuses.index(200)
    # While vLLM loads the model its port is bound but not listening: nothing can answer (see docs).
    assert statuses[0] is None and first_503 < first_200
    reasons = [body for status, body in serving.recorder.seen[:first_200] if status == 503]
    assert {body["status"] for body in reasons} <= {"starting", "warming_up"} and "warming_up" in {
        body["status"] for body in reasons
    }
    assert all(body["reason"] for body in reasons)


def test_phases_are_logged_in_order_with_their_durations(serving):
    finished = serving.process.events("phase_finished")
    assert [e["phase"] for e in finished[:4]] == ["validate_environment", "start_engine", "wait_for_engine", "warmup"]
    assert all(e["status"] == "ok" and isinstance(e["duration_ms"], int) for e in finished[:4])
    command = finished[1]["command"]
    assert command[:3] == ["vllm", "serve", serving.env["SERVING_MODEL_DIR"]]
    states = [e["state"] for e in serving.process.events("state")]
    assert states[-3:] == ["starting", "warming_up", "ready"]


def test_warmup_went_through_every_adapter_and_primed_the_prefix_cache(serving):
    engine = httpx.get(f"{serving.url}/_standin/stats").json()
    assert set(engine["requests_by_model"]) >= {"base", *ADAPTERS}
    assert engine["prefix_cache_hits"] > 0

    def warmup_lines():
        return [e for e in serving.process.events("request") if e["warmup"]]

    planned = len(warmup_plan(ADAPTERS, int(serving.env["SERVING_WARMUP_REQUESTS"])))
    wait_until(lambda: len(warmup_lines()) == planned, "every warmup request's log line")
    assert {e["adapter"] for e in warmup_lines()} == {"base", *ADAPTERS}
    assert {e["stream"] for e in warmup_lines()} == {True, False}
    # Warmup is not customer traffic: the per-adapter counters start at zero.
    assert set(httpx.get(f"{serving.url}/_serving/stats").json()["adapter_requests"].values()) == {0}


def test_emf_lines_are_valid_and_carry_every_contract_metric(serving):
    for adapter in ADAPTERS:
        headers = {"X-Amzn-SageMaker-Adapter-Identifier": adapter}
        assert (
            httpx.post(f"{serving.url}/invocations", json=chat_body(), headers=headers, timeout=10).status_code == 200
        )

    def emf_lines():
        return [line for line in serving.process.json_lines() if "_aws" in line]

    def adapter_traffic_seen():
        counted = {line.get(c.DIM_ADAPTER): line.get(c.METRIC_ADAPTER_REQUESTS, 0) for line in emf_lines()}
        seen = [line for line in emf_lines() if line.get(c.METRIC_ADAPTER_REQUESTS)]
        return {line[c.DIM_ADAPTER] for line in seen} >= set(ADAPTERS) and counted

    def latency_seen():  # the per-request values leave in the next once-a-second write
        return any(c.METRIC_END_TO_END_LATENCY in line for line in emf_lines())

    wait_until(adapter_traffic_seen, "EMF lines counting each adapter's request")
    wait_until(latency_seen, "the requests' end-to-end latency values")
    lines = emf_lines()
    assert all(emf_problems(line) == [] for line in lines), [emf_problems(line) for line in lines]
    assert {line["_aws"]["CloudWatchMetrics"][0]["Namespace"] for line in lines} == {c.METRIC_NAMESPACE}
    emitted = {m["Name"] for line in lines for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    # Non-streamed requests: end-to-end latency, and no first token or time per token to report.
    assert emitted == set(c.VARIANT_METRICS) | set(c.ADAPTER_METRICS) | {c.METRIC_END_TO_END_LATENCY}


def test_a_failing_gpu_turns_ping_503_until_it_recovers(serving):
    fail_file = Path(serving.env["FAKE_GPU_FAIL_FILE"])
    fail_file.touch()
    try:
        wait_until(lambda: serving.ping() == 503, "/ping to turn 503 on a GPU failure")
        body = httpx.get(f"{serving.url}/ping").json()
        assert body["status"] == "unhealthy" and "GPU" in body["reason"]
        assert httpx.post(f"{serving.url}/invocations", json=chat_body()).status_code == 503
    finally:
        fail_file.unlink()
    wait_until(lambda: serving.ping() == 200, "/ping to recover")


def test_sigterm_with_64_streams_in_flight_loses_none(serving):
    """Runs last in this module: it shuts the container down. The engine holds every stream after
    5 tokens, so all 64 are provably in flight when SIGTERM arrives; the test releases them only
    after seeing /ping say 503 and a new invocation refused."""
    serving.mode("hold", hold_after_tokens=5)
    tokens_per_stream = 12

    async def scenario() -> tuple[list[tuple[int, int, str]], int, int, int]:
        started = asyncio.Semaphore(0)

        async def stream(client: httpx.AsyncClient) -> tuple[int, int, str]:
            body = chat_body(stream=True, max_tokens=tokens_per_stream)
            async with client.stream("POST", "/invocations", json=body) as response:
                tokens, last = 0, ""
                async for line in response.aiter_lines():
                    if line.startswith("data: {") and json.loads(line[6:]).get("choices"):
                        tokens += 1
                        if tokens == 1:
                            started.release()
                    if line.startswith("data: "):
                        last = line
                return response.status_code, tokens, last

        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(base_url=serving.url, timeout=PATIENCE_SECONDS, limits=limits) as client:
            streams = [asyncio.create_task(stream(client)) for _ in range(64)]
            for _ in streams:
                await asyncio.wait_for(started.acquire(), PATIENCE_SECONDS)
            os.kill(serving.process.popen.pid, signal.SIGTERM)
            for _ in range(int(PATIENCE_SECONDS / 0.02)):
                ping = await client.get("/ping")
                if ping.status_code == 503:
                    break
                await asyncio.sleep(0.02)
            refused = await client.post("/invocations", json=chat_body())
            in_flight = (await client.get("/_serving/stats")).json()["in_flight"]
            await client.post("/_standin/release")
            results = await asyncio.gather(*streams)
        return results, ping.status_code, refused.status_code, in_flight

    results, ping_status, refused_status, in_flight = asyncio.run(scenario())
    assert ping_status == 503 and refused_status == 503
    assert in_flight == 64
    assert results == [(200, tokens_per_stream, "data: [DONE]")] * 64
    assert serving.process.wait() == EXIT_OK
    drain = next(e for e in serving.process.events("phase_finished") if e["phase"] == "drain")
    assert drain["in_flight_left"] == 0


def test_an_engine_crash_turns_ping_503_and_the_container_exits_non_zero(tmp_path_factory):
    # The stand-in keeps answering for 2 s after its engine dies, like vLLM's (5 s) watchdog.
    serving = launch(tmp_path_factory, "crash", SERVING_WARMUP_REQUESTS="0", STANDIN_WATCHDOG_SECONDS="2")
    try:
        serving.wait_ready()
        serving.mode("crash")
        wait_until(lambda: serving.ping() == 503, "/ping to turn 503 after the engine died")
        body = httpx.get(f"{serving.url}/ping").json()
        assert body["status"] == "failed" and "dead" in body["reason"]
        assert serving.process.wait() == EXIT_ENGINE_DIED
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_an_engine_process_that_vanishes_makes_the_container_exit_non_zero(tmp_path_factory):
    serving = launch(tmp_path_factory, "exit", SERVING_WARMUP_REQUESTS="0")
    try:
        serving.wait_ready()
        with pytest.raises(httpx.TransportError):
            serving.mode("exit")
        assert serving.process.wait() == EXIT_ENGINE_DIED
        failed = [e for e in serving.process.events("state") if e["state"] == "failed"]
        assert "exited with code 1" in failed[0]["reason"]
    finally:
        serving.recorder.running = False
        serving.process.stop()


@pytest.mark.parametrize(
    ("name", "setup", "expected"),
    [
        (
            "no-adapter",
            lambda w: (w / "model" / "lora" / "jp_style_v1" / "adapter_config.json").unlink(),
            "jp_style_v1",
        ),
        ("no-weights", lambda w: (w / "model" / "base" / "config.json").unlink(), "config.json"),
        ("no-gpu", lambda w: (w / "gpu-failed").touch(), "no usable GPU"),
    ],
)
def test_an_unusable_environment_fails_fast_with_a_clear_message(tmp_path_factory, name, setup, expected):
    workdir = tmp_path_factory.mktemp(name)
    port = free_port()
    env = serving_env(workdir, port)
    setup(workdir)
    process = start_supervisor(workdir, env)
    try:
        assert process.wait() == EXIT_INVALID_ENVIRONMENT
        finished = process.events("phase_finished")
        assert [e["phase"] for e in finished] == ["validate_environment"]  # the engine never started
        assert any(expected in problem for problem in finished[0]["problems"]), finished[0]["problems"]
    finally:
        process.stop()


@pytest.mark.parametrize(
    ("name", "overrides", "expected"),
    [
        ("warmup-500", {"STANDIN_MODE": "error500"}, "HTTP 500"),
        ("warmup-stall", {"STANDIN_MODE": "stall", "SERVING_WARMUP_TIMEOUT_SECONDS": "1"}, "within 1 s"),
    ],
)
def test_a_failed_warmup_keeps_ping_503_and_exits_non_zero(tmp_path_factory, name, overrides, expected):
    serving = launch(tmp_path_factory, name, STANDIN_STARTUP_DELAY="0", **overrides)
    try:
        assert serving.process.wait() == EXIT_WARMUP_FAILED
        assert 200 not in serving.recorder.statuses()
        warmup = next(e for e in serving.process.events("phase_finished") if e["phase"] == "warmup")
        assert warmup["status"] == "failed" and expected in warmup["error"]
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_sigterm_while_the_model_loads_stops_cleanly(tmp_path_factory):
    serving = launch(tmp_path_factory, "early-sigterm", STANDIN_STARTUP_DELAY="30")
    try:
        wait_until(lambda: serving.process.events("phase_finished")[1:2], "the engine to be started")
        serving.process.signal(signal.SIGTERM)
        assert serving.process.wait() == EXIT_OK
        assert [e["phase"] for e in serving.process.events("phase_finished")][-1] == "stop_engine"
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_an_engine_that_cannot_start_exits_3(tmp_path):
    env = serving_env(tmp_path, free_port())
    only_gpu = tmp_path / "only-nvidia-smi"
    only_gpu.mkdir()
    (only_gpu / "nvidia-smi").symlink_to(tmp_path / "bin" / "nvidia-smi")
    process = start_supervisor(tmp_path, {**env, "PATH": f"{only_gpu}{os.pathsep}/usr/bin{os.pathsep}/bin"})
    try:
        assert process.wait() == EXIT_ENGINE_START_FAILED
        failed = [e for e in process.events("state") if e["state"] == "failed"]
        assert "could not start the engine" in failed[0]["reason"]
    finally:
        process.stop()


def test_invalid_settings_exit_2_naming_every_bad_variable(tmp_path):
    env = serving_env(tmp_path, free_port(), SERVING_MAX_LORA_RANK="7", SERVING_DRAIN_SECONDS="40")
    process = start_supervisor(tmp_path, env)
    try:
        assert process.wait() == EXIT_INVALID_ENVIRONMENT
        problems = process.events("invalid_settings")[0]["problems"]
        assert any("SERVING_MAX_LORA_RANK" in p for p in problems)
        assert any("SERVING_DRAIN_SECONDS" in p for p in problems)
    finally:
        process.stop()


def test_only_sagemakers_serve_argument_is_accepted(tmp_path):
    from workbench.standin.harness import Process

    env = serving_env(tmp_path, free_port())
    process = Process([env["STANDIN_PYTHON"], "-m", "serving.supervisor", "train"], env, tmp_path / "out.log")
    try:
        assert process.wait() == EXIT_INVALID_ENVIRONMENT
        assert process.events("unexpected_arguments")[0]["arguments"] == ["train"]
    finally:
        process.stop()
