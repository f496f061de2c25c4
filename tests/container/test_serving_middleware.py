"""The middleware inside a running engine process: the stand-in loads it exactly as vLLM 0.33.0 does
(register.py: `app.add_middleware(cls)`), and the test plays the supervisor by writing the state file."""

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from jsonschema import Draft202012Validator

from container.serving.guards import MAX_BODY_BYTES
from container.serving.middleware import ServingMiddleware
from container.serving.state import ServingState, StateRecord, write_state
from workbench.standin.harness import (
    ADAPTERS,
    PATIENCE_SECONDS,
    chat_body,
    free_port,
    serving_env,
    start_standin,
    wait_for_listening,
    wait_until,
)

# The one error shape (vLLM's ErrorResponse), for every error the serving layer or the engine returns.
ERROR_SHAPE = Draft202012Validator(
    {
        "type": "object",
        "required": ["error"],
        "additionalProperties": False,
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "param", "code"],
                "additionalProperties": False,
                "properties": {
                    "message": {"type": "string", "minLength": 1},
                    "type": {"type": "string"},
                    "param": {"type": ["string", "null"]},
                    "code": {"type": "integer"},
                },
            }
        },
    }
)


class Engine:
    def __init__(self, workdir: Path, port: int, process, state_file: Path) -> None:
        self.workdir, self.url, self.process, self.state_file = workdir, f"http://127.0.0.1:{port}", process, state_file
        self.client = httpx.Client(base_url=self.url, timeout=PATIENCE_SECONDS)

    def set_state(self, state: ServingState, reason: str = "set by the test") -> None:
        write_state(str(self.state_file), StateRecord(state, reason))

    def mode(self, mode: str, **extra) -> None:
        assert self.client.post("/_standin/mode", json={"mode": mode, **extra}).status_code == 200

    def stats(self) -> dict:
        return self.client.get("/_serving/stats").json()


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("middleware")
    port = free_port()
    env = serving_env(workdir, port, STANDIN_TOKEN_INTERVAL="0.002", STANDIN_STARTUP_DELAY="0")
    process = start_standin(workdir, env, port, middleware=True)
    wait_for_listening(port, process)
    yield Engine(workdir, port, process, Path(env["SERVING_STATE_FILE"]))
    process.stop()


@pytest.fixture
def ready(engine):
    engine.set_state(ServingState.READY)
    yield engine
    engine.mode("normal")


def assert_error(response: httpx.Response, status: int, error_type: str) -> dict:
    assert response.status_code == status, response.text
    document = response.json()
    assert list(ERROR_SHAPE.iter_errors(document)) == []
    assert document["error"]["code"] == status and document["error"]["type"] == error_type
    return document["error"]


def test_ping_says_503_with_a_json_reason_until_ready_then_200(engine):
    engine.set_state(ServingState.WARMING_UP, "warming up the engine and adapters")
    for method in ("GET", "POST"):  # vLLM registers both for /ping
        response = engine.client.request(method, "/ping")
        assert response.status_code == 503
        assert response.json() == {"status": "warming_up", "reason": "warming up the engine and adapters"}
    engine.set_state(ServingState.READY)
    assert engine.client.get("/ping").status_code == 200
    assert engine.client.get("/ping").json() == {"status": "ready"}


def test_ping_before_the_supervisor_wrote_any_state_is_503(engine):
    engine.state_file.unlink(missing_ok=True)
    response = engine.client.get("/ping")
    assert response.status_code == 503 and response.json()["status"] == "starting"


def test_invocations_are_refused_until_ready_except_the_supervisors_warmup(engine):
    engine.set_state(ServingState.WARMING_UP)
    refused = engine.client.post("/invocations", json=chat_body())
    error = assert_error(refused, 503, "ServiceUnavailableError")
    assert "warming_up" in error["message"] and refused.headers["retry-after"] == "1"
    warmup = engine.client.post("/invocations", json=chat_body(), headers={"X-Serving-Warmup": "1"})
    assert warmup.status_code == 200


@pytest.mark.parametrize("state", [ServingState.DRAINING, ServingState.FAILED, ServingState.UNHEALTHY])
def test_draining_failed_or_unhealthy_refuse_everything_including_warmup(engine, state):
    engine.set_state(state, "because")
    for headers in ({}, {"X-Serving-Warmup": "1"}):
        assert_error(
            engine.client.post("/invocations", json=chat_body(), headers=headers), 503, "ServiceUnavailableError"
        )
    assert engine.client.get("/ping").status_code == 503


def test_routes_the_middleware_does_not_own_pass_through(ready):
    assert ready.client.get("/health").status_code == 200
    assert "vllm:num_requests_running" in ready.client.get("/metrics").text
    assert ready.client.get("/v1/models").status_code == 200


def test_a_body_over_6_mb_is_413_by_content_length(ready):
    response = ready.client.post(
        "/invocations", content=b"x" * (MAX_BODY_BYTES + 1), headers={"Content-Type": "application/json"}
    )
    assert_error(response, 413, "RequestEntityTooLargeError")


def test_a_chunked_body_over_6_mb_is_413_too(ready):
    def chunks():
        for _ in range(7):
            yield b"x" * (1024 * 1024)

    response = ready.client.post("/invocations", content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "RequestEntityTooLargeError")


@pytest.mark.parametrize(
    ("path", "content", "content_type", "param"),
    [
        ("/invocations", json.dumps(chat_body()), "text/plain", None),
        ("/invocations", json.dumps(chat_body()), None, None),
        ("/invocations", "{not json", "application/json", None),
        ("/invocations", "[1, 2]", "application/json", None),
        ("/invocations", json.dumps({"max_tokens": 4}), "application/json", "messages"),
        ("/v1/chat/completions", json.dumps({"messages": []}), "application/json", "messages"),
        ("/v1/completions", json.dumps({"max_tokens": 4}), "application/json", "prompt"),
    ],
)
def test_malformed_requests_are_400_in_the_one_error_shape(ready, path, content, content_type, param):
    headers = {"Content-Type": content_type} if content_type else {}
    response = ready.client.post(path, content=content.encode(), headers=headers)
    assert assert_error(response, 400, "BadRequestError")["param"] == param


@pytest.mark.parametrize(
    ("body", "headers"),
    [(chat_body(model="shoujo_v9"), {}), (chat_body(), {"X-Amzn-SageMaker-Adapter-Identifier": "shoujo_v9"})],
)
def test_an_unknown_adapter_is_400_listing_the_available_ones(ready, body, headers):
    error = assert_error(ready.client.post("/invocations", json=body, headers=headers), 400, "BadRequestError")
    assert "'shoujo_v9'" in error["message"]
    assert all(name in error["message"] for name in ("base", *ADAPTERS))


def test_a_prompt_over_the_context_budget_is_400_with_the_token_numbers(ready):
    history = [{"role": "user", "content": "Tell me about this series. " * 200}] * 3
    error = assert_error(ready.client.post("/invocations", json={"messages": history}), 400, "BadRequestError")
    assert "context budget of 3496 tokens" in error["message"] and "max_model_len 4096 minus 600" in error["message"]


def test_the_adapter_header_reaches_the_engine(ready):
    before = ready.client.get("/_standin/stats").json()["requests_by_model"].get("jp_style_v1", 0)
    response = ready.client.post(
        "/invocations", json=chat_body(), headers={"X-Amzn-SageMaker-Adapter-Identifier": "jp_style_v1"}
    )
    assert response.status_code == 200 and response.json()["model"] == "jp_style_v1"
    assert ready.client.get("/_standin/stats").json()["requests_by_model"]["jp_style_v1"] == before + 1
    assert ready.stats()["adapter_requests"]["jp_style_v1"] >= 1


ADAPTER_HEADER = "X-Amzn-SageMaker-Adapter-Identifier"


@pytest.mark.parametrize(
    ("path", "model", "headers", "served"),
    [
        ("/invocations", "general_support_v2", [], "general_support_v2"),  # bare vLLM: the base model
        ("/invocations", None, [], "base"),
        ("/invocations", "general_support_v2", [(ADAPTER_HEADER, "jp_style_v1")], "jp_style_v1"),
        ("/v1/chat/completions", "general_support_v2", [], "general_support_v2"),
        ("/v1/chat/completions", "jp_style_v1", [(ADAPTER_HEADER, "jp_style_v1")], "jp_style_v1"),
    ],
)
def test_the_adapter_served_is_the_one_logged_and_counted(ready, path, model, headers, served):
    """docs/container.md "Choosing the adapter": the response's `model` (what the engine ran), the log
    line and the per-adapter counter all name the same model."""
    request_id = f"req-adapter-{path}-{model}-{len(headers)}"
    engine_before = ready.client.get("/_standin/stats").json()["requests_by_model"].get(served, 0)
    counted_before = ready.stats()["adapter_requests"][served]
    body = chat_body(**({"model": model} if model else {}))
    response = ready.client.post(path, json=body, headers=[*headers, ("X-Request-Id", request_id)])
    assert response.status_code == 200 and response.json()["model"] == served
    assert ready.client.get("/_standin/stats").json()["requests_by_model"][served] == engine_before + 1
    assert ready.stats()["adapter_requests"][served] == counted_before + 1
    record = wait_until(
        lambda: next((e for e in ready.process.events("request") if e["request_id"] == request_id), None),
        "the request's log line",
    )
    assert record["adapter"] == served


@pytest.mark.parametrize(
    ("path", "model", "headers", "says"),
    [
        ("/invocations", None, [(ADAPTER_HEADER, "jp_style_v1"), (ADAPTER_HEADER, "manga_domain_v3")], "2 times"),
        ("/v1/chat/completions", "manga_domain_v3", [(ADAPTER_HEADER, "jp_style_v1")], "not read on the /v1"),
        ("/invocations", "jp_style_v1", [(ADAPTER_HEADER, "")], "unknown adapter ''"),
    ],
)
def test_an_ambiguous_adapter_is_400_before_the_engine_sees_it(ready, path, model, headers, says):
    engine_before = ready.client.get("/_standin/stats").json()["requests_by_model"]
    body = chat_body(**({"model": model} if model else {}))
    error = assert_error(ready.client.post(path, json=body, headers=headers), 400, "BadRequestError")
    assert says in error["message"] and error["param"] == "model"
    assert ready.client.get("/_standin/stats").json()["requests_by_model"] == engine_before


def test_a_stream_arrives_chunk_by_chunk(ready):
    """The engine holds every stream after 3 tokens until released; the client must already have
    those 3 tokens while it holds, which it cannot if anything on the way buffers the response."""
    ready.mode("hold", hold_after_tokens=3)
    tokens = []
    with ready.client.stream("POST", "/invocations", json=chat_body(stream=True, max_tokens=10)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        for line in lines:
            if line.startswith("data: {") and json.loads(line[6:])["choices"]:
                tokens.append(line)
            if len(tokens) == 3:
                break
        assert ready.client.get("/_standin/stats").json()["running"] == 1  # still held inside the engine
        ready.client.post("/_standin/release")
        rest = [line for line in lines if line.startswith("data: ")]
    content = [line for line in rest if line.startswith("data: {") and json.loads(line[6:])["choices"]]
    assert len(tokens) + len(content) == 10
    assert rest[-1] == "data: [DONE]"


def test_many_concurrent_streams_all_complete(ready):
    async def one(client: httpx.AsyncClient) -> int:
        async with client.stream("POST", "/invocations", json=chat_body(stream=True, max_tokens=20)) as response:
            events = [line async for line in response.aiter_lines() if line.startswith("data: {")]
        return sum(1 for event in events if json.loads(event[6:])["choices"])

    async def run() -> list[int]:
        async with httpx.AsyncClient(base_url=ready.url, timeout=PATIENCE_SECONDS) as client:
            return await asyncio.gather(*(one(client) for _ in range(32)))

    assert asyncio.run(run()) == [20] * 32


def test_an_engine_oom_is_counted_and_answered_retryably_and_the_process_stays_up(ready):
    before = ready.stats()["oom_errors"]
    ready.mode("oom")
    response = ready.client.post("/invocations", json=chat_body())
    error = assert_error(response, 503, "ServiceUnavailableError")
    assert "out of GPU memory" in error["message"] and response.headers["retry-after"] == "1"
    assert "x-request-id" in response.headers
    with ready.client.stream("POST", "/invocations", json=chat_body(stream=True)) as streamed:
        events = [line for line in streamed.iter_lines() if line.startswith("data: ")]
    assert streamed.status_code == 200 and any("out of memory" in event for event in events)
    assert ready.stats()["oom_errors"] == before + 2
    ready.mode("normal")
    assert ready.client.post("/invocations", json=chat_body()).status_code == 200
    assert ready.process.popen.poll() is None


def test_an_engine_500_keeps_the_one_error_shape_and_is_not_counted_as_oom(ready):
    before = ready.stats()["oom_errors"]
    ready.mode("error500")
    assert_error(ready.client.post("/invocations", json=chat_body()), 500, "InternalServerError")
    assert ready.stats()["oom_errors"] == before


def test_an_exception_no_handler_answers_is_a_json_500_logged_with_where_it_was_raised_never_its_message(ready):
    """An engine exception that reaches the middleware (seen with the real vLLM: 'unhandled RuntimeError'): the
    caller gets the one error shape, and the log line says where it was raised, so that on-call can find it,
    but not its message, which may quote the chat (the stand-in's does)."""
    secret = "MY-PRIVATE-QUESTION-2718"
    ready.mode("raise")
    try:
        response = ready.client.post("/invocations", json=chat_body(secret), headers={"X-Request-Id": "req-raise-1"})
    finally:
        ready.mode("normal")
    error = assert_error(response, 500, "InternalServerError")
    assert secret not in error["message"] and response.headers["x-request-id"] == "req-raise-1"
    record = wait_until(
        lambda: next((e for e in ready.process.events("request") if e["request_id"] == "req-raise-1"), None),
        "the request's log line",
    )
    assert record["status"] == 500 and record["outcome"] == "engine_error"
    assert record["error"].startswith("unhandled RuntimeError at standin/engine.py:"), record["error"]
    assert record["error"].endswith(" in admit")
    assert secret not in ready.process.output()


def test_an_exception_after_the_headers_ends_the_stream_cleanly_and_its_message_reaches_no_output(ready):
    """Issue 51: the engine raises mid-stream (headers and two tokens out) with the chat in its message. The
    client's stream ends with the one error shape and `[DONE]`, a clean end of the chunked body; the request's
    line says where it was raised; the secret is nowhere in the process's output (the server's logs included:
    re-raising made uvicorn log the traceback with the message)."""
    secret = "MY-PRIVATE-QUESTION-3141"
    ready.mode("raise_mid_stream")
    try:
        with ready.client.stream(
            "POST", "/invocations", json=chat_body(secret, stream=True), headers={"X-Request-Id": "req-raise-2"}
        ) as response:
            events = [line for line in response.iter_lines() if line.startswith("data: ")]  # raises if cut short
    finally:
        ready.mode("normal")
    assert response.status_code == 200 and events[-1] == "data: [DONE]"
    tokens = [e for e in events[:-2] if json.loads(e[6:]).get("choices")]
    assert len(tokens) == 2
    error = json.loads(events[-2][6:])
    assert list(ERROR_SHAPE.iter_errors(error)) == [] and error["error"]["code"] == 500
    record = wait_until(
        lambda: next((e for e in ready.process.events("request") if e["request_id"] == "req-raise-2"), None),
        "the request's log line",
    )
    assert record["outcome"] == "engine_error" and record["error"].endswith(" in events"), record
    assert secret not in ready.process.output()
    assert "Traceback" not in ready.process.output()
    assert ready.client.post("/invocations", json=chat_body()).status_code == 200


def test_an_exception_the_engine_catches_and_logs_mid_stream_leaves_its_message_out_of_every_log(ready):
    """Issue 51, as vLLM's serving_chat.py does it: the generator catches the exception, logs it with its
    traceback on vLLM's logger and sends it as an error event. The client gets the error event (its own
    request quoted back to it); the process's output has the log line, with the exception's type and where
    it was raised, and not its message."""
    secret = "MY-PRIVATE-QUESTION-1618"
    ready.mode("raise_in_stream")
    try:
        with ready.client.stream(
            "POST", "/invocations", json=chat_body(secret, stream=True), headers={"X-Request-Id": "req-raise-3"}
        ) as response:
            events = [line for line in response.iter_lines() if line.startswith("data: ")]
    finally:
        ready.mode("normal")
    assert events[-1] == "data: [DONE]" and json.loads(events[-2][6:])["error"]["code"] == 500
    record = wait_until(
        lambda: next((e for e in ready.process.events("request") if e["request_id"] == "req-raise-3"), None),
        "the request's log line",
    )
    assert record["outcome"] == "engine_error" and record["error"] == "error event in the stream: InternalServerError"
    output = ready.process.output()
    assert "Error in chat completion stream generator. (RuntimeError at standin/engine.py:" in output
    assert secret not in output and "Traceback" not in output


def test_one_log_line_per_request_with_timings_and_never_the_text(ready):
    secret = "MY-PRIVATE-QUESTION-3141"
    headers = {"X-Request-Id": "req-log-test-1", "X-Amzn-SageMaker-Adapter-Identifier": "manga_domain_v3"}
    response = ready.client.post("/invocations", json=chat_body(secret, stream=True), headers=headers)
    assert response.status_code == 200 and response.headers["x-request-id"] == "req-log-test-1"

    def line():
        return next((e for e in ready.process.events("request") if e["request_id"] == "req-log-test-1"), None)

    record = wait_until(line, "the request's log line")
    assert record["adapter"] == "manga_domain_v3" and record["status"] == 200 and record["stream"] is True
    assert record["model_version"] == "v0.1.0-test" and record["path"] == "/invocations"
    assert record["prompt_tokens"] > 0 and record["output_tokens"] == 8
    assert record["queue_wait_ms"] >= 0 and record["ttft_ms"] > 0 and record["total_ms"] >= record["ttft_ms"]
    assert secret not in ready.process.output()
    assert "tok0" not in ready.process.output()


def test_refused_requests_are_logged_too(ready):
    ready.client.post("/invocations", json=chat_body(model="nope"), headers={"X-Request-Id": "req-log-test-2"})
    record = wait_until(
        lambda: next((e for e in ready.process.events("request") if e["request_id"] == "req-log-test-2"), None),
        "the refused request's log line",
    )
    assert record["status"] == 400 and "unknown adapter" in record["error"]


def test_stats_report_in_flight_and_counters(ready):
    stats = ready.stats()
    assert stats["state"] == "ready" and stats["in_flight"] == 0
    assert set(stats["adapter_requests"]) == {"base", *ADAPTERS}


def test_non_http_scopes_pass_straight_through(tmp_path, monkeypatch):
    for name, value in serving_env(tmp_path, free_port()).items():
        monkeypatch.setenv(name, value)
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    middleware = ServingMiddleware(app)
    for scope_type in ("lifespan", "websocket"):
        asyncio.run(middleware({"type": scope_type, "path": "/ping"}, None, None))
    assert seen == ["lifespan", "websocket"]
