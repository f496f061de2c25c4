"""Faults an independent suite found, each reproduced against real processes: bad bodies the guards
did not foresee, client input echoed without bound, outcomes logged wrongly (the stand-in with our
middleware, as in test_serving_middleware.py), and what SIGTERM, a stalled event loop, a slow upload
and a hung engine do to a running container (the supervisor, as in test_serving_supervisor.py)."""

import asyncio
import contextlib
import json
import os
import signal
import socket
import threading
import time

import httpx
import pytest
import test_serving_middleware
from test_serving_supervisor import launch

from container.serving.errors import ECHO_LIMIT
from container.serving.guards import Admitted, RequestGuard
from container.serving.middleware import ServingMiddleware, _RequestLog
from container.serving.supervisor import EXIT_ENGINE_HUNG, EXIT_OK
from container.serving.tokens import estimate_chat_tokens, estimate_completion_tokens
from workbench.standin.harness import PATIENCE_SECONDS, chat_body, free_port, serving_env, wait_until

# The stand-in with our middleware, one per module, as the middleware tests run it.
engine, ready, assert_error = (
    test_serving_middleware.engine,
    test_serving_middleware.ready,
    test_serving_middleware.assert_error,
)
GUARD = RequestGuard(("manga_domain_v3",), max_model_len=4096, generation_reserve_tokens=600)


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def request_line(process, request_id: str) -> dict:
    def line():
        return next((e for e in process.events("request") if e["request_id"] == request_id), None)

    return wait_until(line, f"the log line of {request_id}")


# --- bad bodies: 400 in the one error shape and a log line, never a 500 ----------------------------


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        (
            "integer over 4,300 digits",
            '{"messages": [{"role": "user", "content": "hi"}], "seed": 1' + "0" * 5000 + "}",
            "4300",
        ),
        ("nesting 100,000 deep", '{"messages": ' + nested(100_000) + "}", "nested too deeply"),
    ],
)
def test_bodies_json_cannot_parse_are_400_and_logged(ready, name, raw, expected):
    request_id = f"bad-body-{name.split()[0]}"
    response = ready.client.post(
        "/invocations", content=raw.encode(), headers={"Content-Type": "application/json", "X-Request-Id": request_id}
    )
    assert expected in assert_error(response, 400, "BadRequestError")["message"]
    record = request_line(ready.process, request_id)
    assert record["status"] == 400 and record["outcome"] == "rejected" and expected in record["error"]


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}, {"type": "text", "text": None}]}]},
        {"messages": [{"role": "user", "content": {"text": "not a list"}}, "not a message", 7]},
        {"prompt": json.loads(nested(600))},
        {"prompt": [["a", "b"], {"x": 1}]},
    ],
)
def test_shapes_the_estimate_did_not_foresee_never_raise(body):
    outcome = GUARD.check_body("/invocations", json.dumps(body).encode(), ())
    assert isinstance(outcome, Admitted)  # the engine judges the shape itself (vLLM answers 400)


def test_the_estimate_counts_only_text_it_can_read():
    parts = [{"role": "user", "content": [{"type": "text", "text": 5}, {"type": "text", "text": "abcd" * 10}]}]
    assert estimate_chat_tokens(parts) == 10 + 5 + 5
    assert estimate_completion_tokens(json.loads(nested(600))) == 0
    assert estimate_completion_tokens([[1, 2, 3], "abcd"]) == 3


def test_a_body_the_guards_cannot_check_is_400_not_500(ready, monkeypatch):
    """Whatever a guard raises on a body, the answer is a 400 (checked through the process: a body
    with a non-string text part went to the engine as a 500 with a traceback before)."""
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}], "max_tokens": 2}
    response = ready.client.post("/invocations", json=body)
    assert response.status_code < 500, response.text


# --- client input echoed: bounded in the error body, the header and the log line ------------------


def test_client_input_is_echoed_at_most_200_characters(ready):
    huge = "x" * 1_000_000
    request_id = "r" * 10_000
    response = ready.client.post("/invocations", json=chat_body(model=huge), headers={"X-Request-Id": request_id})
    message = assert_error(response, 400, "BadRequestError")["message"]
    assert "x" * ECHO_LIMIT in message and "x" * (ECHO_LIMIT + 1) not in message and "999800 more" in message
    assert len(response.headers["x-request-id"]) < ECHO_LIMIT + 50
    record = request_line(ready.process, response.headers["x-request-id"])
    assert len(json.dumps(record)) < 2000
    assert max(len(line) for line in ready.process.output().splitlines()) < 10_000


# --- outcomes: engine refusals and disconnects logged as what they were ----------------------------


def test_a_request_the_engine_refuses_is_logged_with_its_error_type_and_param_never_its_message(ready):
    """The engine's message may quote the request (pydantic's names the input value): the client gets it,
    the log line gets the error's type and the field it names (issue 51)."""
    response = ready.client.post(
        "/invocations", json=chat_body(max_tokens="many"), headers={"X-Request-Id": "engine-refused-1"}
    )
    assert "max_tokens: Input should be a valid integer" in assert_error(response, 400, "BadRequestError")["message"]
    record = request_line(ready.process, "engine-refused-1")
    assert record["outcome"] == "engine_rejected" and record["status"] == 400
    assert record["error"] == "engine answered 400: BadRequestError (param max_tokens)"


def test_a_completed_request_is_logged_as_completed(ready):
    ready.client.post("/invocations", json=chat_body(stream=True), headers={"X-Request-Id": "completed-1"})
    record = request_line(ready.process, "completed-1")
    assert record["outcome"] == "completed" and record["error"] is None


def test_a_client_that_disconnects_mid_stream_is_logged_as_such(ready):
    ready.mode("hold", hold_after_tokens=2)
    headers = {"X-Request-Id": "disconnect-1"}
    with ready.client.stream("POST", "/invocations", json=chat_body(stream=True), headers=headers) as response:
        next(line for line in response.iter_lines() if line.startswith("data: {"))
    # Leaving the block closes the connection while the engine still holds the stream.
    record = request_line(ready.process, "disconnect-1")
    assert record["outcome"] == "client_disconnected" and record["error"]
    ready.client.post("/_standin/release")


def test_a_client_that_disconnects_while_uploading_is_logged(ready):
    with socket.create_connection(("127.0.0.1", int(ready.url.rsplit(":", 1)[1]))) as sock:
        sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'X-Request-Id: upload-gone-1\r\nContent-Length: 1000\r\n\r\n{"messages": '
        )
        wait_until(lambda: ready.stats()["in_flight"] == 1, "the upload to count as in flight")
    record = request_line(ready.process, "upload-gone-1")
    assert record["outcome"] == "client_disconnected" and "body" in record["error"]
    wait_until(lambda: ready.stats()["in_flight"] == 0, "the in-flight count to return to 0")


# --- shutdown, stalls and hangs, through the supervisor --------------------------------------------


def test_sigterm_drains_a_slow_upload_and_held_streams_through_a_2_s_event_loop_stall(tmp_path_factory):
    """The drain's stats poll times out while the API server's loop is stalled for 2 s; before, one
    timeout ended the drain and the engine was stopped under 8 running streams and an upload."""
    serving = launch(tmp_path_factory, "drain-stall", SERVING_WARMUP_REQUESTS="0", STANDIN_STARTUP_DELAY="0")
    try:
        serving.wait_ready()
        serving.mode("hold", hold_after_tokens=2)
        payload = json.dumps(chat_body(stream=True, max_tokens=6)).encode()

        async def scenario():
            reader, writer = await asyncio.open_connection("127.0.0.1", serving.port)
            writer.write(
                b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                + f"Content-Length: {len(payload)}\r\n\r\n".encode()
                + payload[:10]
            )
            await writer.drain()
            async with httpx.AsyncClient(base_url=serving.url, timeout=PATIENCE_SECONDS) as client:

                async def stream():
                    async with client.stream("POST", "/invocations", json=chat_body(stream=True, max_tokens=6)) as r:
                        return r.status_code, [line async for line in r.aiter_lines() if line.startswith("data: ")]

                streams = [asyncio.create_task(stream()) for _ in range(8)]
                while (await client.get("/_serving/stats")).json()["in_flight"] < 9:
                    await asyncio.sleep(0.02)
                os.kill(serving.process.popen.pid, signal.SIGTERM)
                while (await client.get("/ping")).status_code != 503:
                    await asyncio.sleep(0.02)
                await client.post("/_standin/mode", json={"mode": "block", "seconds": 2})
                writer.write(payload[10:])
                await writer.drain()
                await client.post("/_standin/release")
                results = await asyncio.gather(*streams)
            upload = await reader.read()
            writer.close()
            return results, upload

        results, upload = asyncio.run(scenario())
        assert all(status == 200 and events[-1] == "data: [DONE]" for status, events in results)
        assert upload.startswith(b"HTTP/1.1 200") and b"data: [DONE]" in upload
        assert serving.process.wait() == EXIT_OK
        assert serving.process.events("drain_poll_failed")  # the stall was seen, and tolerated
        drain = next(e for e in serving.process.events("phase_finished") if e["phase"] == "drain")
        assert drain["in_flight_left"] == 0
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_a_stream_cut_at_shutdown_still_gets_its_log_line(tmp_path_factory):
    # 6 s drain: 1 s for HTTP requests, then the engine is stopped under the held stream.
    serving = launch(
        tmp_path_factory, "cut", SERVING_WARMUP_REQUESTS="0", STANDIN_STARTUP_DELAY="0", SERVING_DRAIN_SECONDS="6"
    )
    try:
        serving.wait_ready()
        serving.mode("hold", hold_after_tokens=1)
        headers = {"X-Request-Id": "cut-1"}
        with httpx.stream(
            "POST", f"{serving.url}/invocations", json=chat_body(stream=True), headers=headers, timeout=PATIENCE_SECONDS
        ) as response:
            lines = response.iter_lines()
            next(line for line in lines if line.startswith("data: {"))
            serving.process.signal(signal.SIGTERM)
            rest = list(lines)
        assert serving.process.wait() == EXIT_OK
        assert "data: [DONE]" not in rest[-1:] or any('"error"' in line for line in rest)
        records = [e for e in serving.process.events("request") if e["request_id"] == "cut-1"]
        assert len(records) == 1 and records[0]["outcome"] != "completed" and records[0]["error"]
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_a_hung_engine_turns_ping_503_and_the_container_exits(tmp_path_factory):
    serving = launch(
        tmp_path_factory, "hung", SERVING_WARMUP_REQUESTS="0", STANDIN_STARTUP_DELAY="0",
        SERVING_ENGINE_STALL_SECONDS="1.5",
    )  # fmt: skip
    try:
        serving.wait_ready()
        time.sleep(3 * 1.5)  # idle for twice the stall time: no requests, no hang
        assert serving.ping() == 200
        serving.mode("stall")

        def stuck_stream() -> None:  # hangs until the container goes; how it ends is not the point here
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{serving.url}/invocations", json=chat_body(stream=True), timeout=PATIENCE_SECONDS)

        threading.Thread(target=stuck_stream, daemon=True).start()
        assert serving.process.wait() == EXIT_ENGINE_HUNG
        failed = [body for status, body in serving.recorder.seen if status == 503 and body["status"] == "failed"]
        assert failed and "no token for 1.5 s" in failed[0]["reason"]
    finally:
        serving.recorder.running = False
        serving.process.stop()


def test_at_interpreter_exit_running_requests_are_logged_as_cut(tmp_path, monkeypatch, capfd):
    """vLLM's shutdown may end the event loop with requests still running: the atexit hook writes
    their lines without one."""
    for name, value in serving_env(tmp_path, free_port()).items():
        monkeypatch.setenv(name, value)
    middleware = ServingMiddleware(None)
    running = _RequestLog("running-at-exit", "/invocations", False, time.perf_counter())
    middleware.active.add(running)
    middleware._log_at_shutdown()  # as atexit calls it: no event loop
    lines = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    assert [(line["request_id"], line["outcome"]) for line in lines] == [("running-at-exit", "cut_at_shutdown")]
