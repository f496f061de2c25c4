"""What vLLM's API server lacks for SageMaker, added inside its own process.

vLLM 0.33.0 imports `--middleware serving.middleware.ServingMiddleware` and installs it with
`app.add_middleware(cls)` (vllm/entrypoints/serve/middleware/register.py), after its own middleware,
so this class sees every request first. It is pure ASGI: non-HTTP scopes (lifespan, websockets) and
every path it does not own pass straight through, and responses stream through it message by message.

It owns:
- `/ping`: SageMaker's readiness signal, answered from the supervisor's state file, never from the engine;
- the traffic gate and request guards on the inference routes (one JSON error shape, 4xx not 5xx);
- admission: a request projected to wait past the deadline for its first token is answered 429 at once
  (serving/admission.py);
- an out-of-memory error from the engine: counted and answered with a retryable 503;
- no exception's message in any log line of the process (serving/log_redaction.py);
- one structured log line per inference request (never prompt or completion text), and its latency as
  the client feels it (time to first token, per output token, end to end: serving/latency.py);
- `/_serving/stats` for the supervisor (loopback clients only): in-flight count and counters.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import json
import time
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from typing import Any

from . import contract as c
from .admission import Admission, Shed
from .errors import clip, error_body, send_error, send_json
from .guards import (
    ADAPTER_HEADER,
    CHAT_PATH,
    COMPLETION_PATH,
    INVOCATIONS_PATH,
    MAX_BODY_BYTES,
    TOO_LARGE,
    Admitted,
    Rejection,
    RequestGuard,
)
from .jsonlog import JsonLogger, json_line, write_lines
from .latency import LatencyValues, request_latency
from .log_redaction import raised_at, withhold_exception_messages
from .settings import BASE_MODEL_NAME, Settings
from .state import ServingState, StateReader

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PING_PATH = "/ping"
STATS_PATH = "/_serving/stats"
INFERENCE_PATHS = frozenset((INVOCATIONS_PATH, CHAT_PATH, COMPLETION_PATH))
# The supervisor's warmup requests carry this header; honoured only from loopback clients.
WARMUP_HEADER = "x-serving-warmup"
# CUDA's "CUDA out of memory" and torch's OutOfMemoryError message both contain this.
OOM_MARKER = b"out of memory"
RETRY_AFTER = (b"retry-after", b"1")
# Request log lines are written in batches this long after their requests end, off the hot path.
LOG_FLUSH_SECONDS = 1.0
READY_BODY = json.dumps({"status": ServingState.READY.value}).encode()
_ADAPTER_HEADER_B = ADAPTER_HEADER.encode()
_WARMUP_HEADER_B = WARMUP_HEADER.encode()


def is_loopback(scope: Scope) -> bool:
    client = scope.get("client")
    host = client[0] if client else ""
    return host == "::1" or host.startswith("127.")


class ServingCounters:
    """Cumulative since the process started; the supervisor turns them into per-interval deltas."""

    def __init__(self, adapters: tuple[str, ...], admission: Admission) -> None:
        self.in_flight = 0
        self.oom_errors = 0
        self.adapter_requests: Counter[str] = Counter(dict.fromkeys((BASE_MODEL_NAME, *adapters), 0))
        self.admission = admission

    def snapshot(self, state: ServingState) -> dict[str, Any]:
        return {
            "state": state.value,
            "in_flight": self.in_flight,
            "oom_errors": self.oom_errors,
            "shed": self.admission.shed,
            "adapter_requests": dict(self.adapter_requests),
            "admission": self.admission.snapshot(),
        }


class ServingMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        withhold_exception_messages()  # vLLM logs the engine exceptions it catches with their text (issue 51)
        settings = Settings.from_env()
        self.model_version = settings.model_version
        self.state = StateReader(settings.state_file)
        self.guard = RequestGuard(settings.adapters, settings.max_model_len, settings.generation_reserve_tokens)
        self.admission = Admission(settings.admission_deadline_ms, settings.max_num_seqs)
        self.counters = ServingCounters(settings.adapters, self.admission)
        self.request_log = RequestLogBuffer(JsonLogger("serving", settings.log_level), settings, self.admission)
        # Requests between their first byte and their last: logged as cut if the server stops first.
        self.active: set[_RequestLog] = set()
        atexit.register(self._log_at_shutdown)
        # Unique across instances without a uuid4() per request: random per process, then a counter.
        self._request_prefix = uuid.uuid4().hex[:12]
        self._request_numbers = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._flush_on_shutdown(receive), send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == PING_PATH:
            await self._ping(send)
        elif path in INFERENCE_PATHS and scope["method"] == "POST":
            await self._inference(scope, receive, send)
        elif path == STATS_PATH and is_loopback(scope):
            body = json.dumps(self.counters.snapshot(self.state.current().state)).encode()
            await send_json(send, 200, body)
        else:
            await self.app(scope, receive, send)

    def _flush_on_shutdown(self, receive: Receive) -> Receive:
        async def lifespan_receive() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                self._log_at_shutdown()
            return message

        return lifespan_receive

    def _log_at_shutdown(self) -> None:
        """Writes every pending line and one for each request still running, which the server is about
        to cut; from now on lines are written as requests end (no flush timer will run)."""
        self.request_log.close()  # first: at interpreter exit no event loop is left for a flush timer
        for request in list(self.active):
            request.settle(shutting_down=True)
            self.request_log.add(request)

    async def _ping(self, send: Send) -> None:
        record = self.state.current()
        if record.state is ServingState.READY:
            await send_json(send, 200, READY_BODY)
        else:
            await send_json(send, 503, json.dumps({"status": record.state.value, "reason": record.reason}).encode())

    async def _inference(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        content_type = content_length = request_id = None
        adapter_headers: tuple[str, ...] = ()  # every value, unstripped: vLLM reads the first as it is
        warmup = False
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"content-length":
                content_length = value.decode("latin-1")
            elif name == _ADAPTER_HEADER_B:
                adapter_headers += (value.decode("latin-1"),)
            elif name == b"x-request-id":
                request_id = clip(value.decode("latin-1"))
            elif name == _WARMUP_HEADER_B:
                warmup = True
        warmup = warmup and is_loopback(scope)
        request_id = request_id or f"{self._request_prefix}-{next(self._request_numbers)}"
        request = _RequestLog(request_id, scope["path"], warmup, started)
        try:
            await self._admit(scope, receive, send, request, content_type, content_length, adapter_headers)
        except asyncio.CancelledError:
            request.cancelled = True
            raise
        finally:
            request.settle()
            self.request_log.add(request)

    async def _admit(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request: _RequestLog,
        content_type: str | None,
        content_length: str | None,
        adapter_headers: tuple[str, ...],
    ) -> None:
        record = self.state.current()
        open_for_warmup = request.warmup and record.state in (ServingState.STARTING, ServingState.WARMING_UP)
        if record.state is not ServingState.READY and not open_for_warmup:
            message = f"not accepting requests: {record.state.value} ({record.reason})"
            await self._refuse(send, request, Rejection(503, message), (RETRY_AFTER,))
            return
        rejection = self.guard.check_headers(content_type, content_length)
        if rejection is not None:
            await self._refuse(send, request, rejection)
            return
        # In flight from here, while its body is still arriving: a drain must wait for it too.
        self.counters.in_flight += 1
        self.active.add(request)
        try:
            body = await _read_body(receive)
            if body is None:
                request.outcome, request.error = CLIENT_DISCONNECTED, "the client went away while sending its body"
                return
            outcome = (
                TOO_LARGE if isinstance(body, Rejection) else self._check_body(request.path, body, adapter_headers)
            )
            if isinstance(outcome, Rejection):
                await self._refuse(send, request, outcome)
                return
            shed = None if request.warmup else self.admission.check()
            if shed is not None:
                await self._shed(send, request, shed)
                return
            if outcome.add_adapter_header:  # so that vLLM's /invocations serves the adapter logged and counted
                scope = {**scope, "headers": [*scope["headers"], (_ADAPTER_HEADER_B, outcome.adapter.encode())]}
            await self._forward(scope, receive, send, body, outcome, request)
        finally:
            self.counters.in_flight -= 1
            self.active.discard(request)

    def _check_body(self, path: str, body: bytes, adapter_headers: tuple[str, ...]) -> Rejection | Admitted:
        try:
            return self.guard.check_body(path, body, adapter_headers)
        except Exception as exc:  # a body no guard foresaw is still the client's mistake: 400, never 500
            return Rejection(400, f"request body could not be checked ({type(exc).__name__}); see the API reference")

    async def _refuse(
        self, send: Send, request: _RequestLog, rejection: Rejection, headers: tuple[tuple[bytes, bytes], ...] = ()
    ) -> None:
        request.status, request.error, request.outcome = rejection.status, rejection.message, REJECTED
        request_id_header = (b"x-request-id", request.request_id.encode("latin-1", "replace"))
        await send_error(send, rejection.status, rejection.message, rejection.param, (*headers, request_id_header))

    async def _shed(self, send: Send, request: _RequestLog, shed: Shed) -> None:
        """429 before the engine sees the request; Retry-After from the projected wait."""
        await self._refuse(
            send, request, Rejection(429, shed.message), ((b"retry-after", str(shed.retry_after_seconds).encode()),)
        )
        request.outcome, request.projected_wait_ms = SHED, shed.projected_wait_ms

    async def _forward(
        self, scope: Scope, receive: Receive, send: Send, body: bytes, admitted: Admitted, request: _RequestLog
    ) -> None:
        self.admission.enter()
        try:
            await self._call_engine(scope, receive, send, body, admitted, request)
        finally:
            self.admission.leave()

    async def _call_engine(
        self, scope: Scope, receive: Receive, send: Send, body: bytes, admitted: Admitted, request: _RequestLog
    ) -> None:
        if not request.warmup:
            self.counters.adapter_requests[admitted.adapter] += 1
        request.adapter, request.stream = admitted.adapter, admitted.stream
        request_id_header = (b"x-request-id", request.request_id.encode("latin-1", "replace"))
        body_sent = False

        async def replay_receive() -> Message:
            # The guards consumed the body; hand it to vLLM once, then pass disconnects through.
            nonlocal body_sent
            if body_sent:
                message = await receive()
                if message["type"] == "http.disconnect":
                    request.disconnected = True
                return message
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        # Every streamed token passes through tracked_send, so it does next to nothing: it keeps the last
        # three body messages (a stream ends with vLLM's usage or error event, `data: [DONE]` and
        # Starlette's empty closing message) in a bounded deque and returns the outer send's awaitable
        # instead of a coroutine of its own. Until the first body byte is out it also times that byte.
        response_started = False  # headers sent
        body_started = False  # first body byte sent: from here on, the fast path
        held_start: Message | None = None  # a 5xx response, held until its body shows whether it is an OOM
        held_body: list[bytes] = []
        tail: deque[Message] = deque(maxlen=3)
        keep = tail.append

        def tracked_send(message: Message) -> Awaitable[None]:
            nonlocal response_started, body_started, held_start
            if body_started:  # the common case: a body message of a response already under way
                keep(message)
                return send(message)
            if message["type"] == "http.response.body":
                if held_start is None:
                    if message.get("body"):
                        request.first_byte_at, body_started = time.perf_counter(), True
                    keep(message)
                    return send(message)
                held_body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return _nothing()
                return self._release_error(send, held_start, b"".join(held_body), request, request_id_header)
            if message["type"] == "http.response.start":
                request.status = message["status"]
                if request.status >= 500:
                    held_start = message
                    return _nothing()
                message["headers"] = [*message.get("headers", ()), request_id_header]
                response_started = True
            return send(message)

        try:
            await self.app(scope, replay_receive, tracked_send)
        except Exception as exc:
            request.outcome, request.error = ENGINE_ERROR, f"unhandled {type(exc).__name__}{raised_at(exc)}"
            if response_started:
                # Headers are out: end the body here rather than re-raise, for the server would log the
                # traceback with the exception's message, which may quote the chat (issue 51).
                await _end_with_error(send, request.stream)
                return
            oom = OOM_MARKER in str(exc).lower().encode()
            if oom:
                request.outcome, request.error, request.oom = OUT_OF_MEMORY, OUT_OF_MEMORY, True
            await self._send_engine_error(send, oom, request, request_id_header)
        finally:
            if held_start is None and tail:
                request.read_tail([m.get("body", b"") for m in tail], complete=not tail[-1].get("more_body"))
            if request.oom:
                self.counters.oom_errors += 1

    async def _release_error(
        self, send: Send, start: Message, body: bytes, request: _RequestLog, request_id_header: tuple[bytes, bytes]
    ) -> None:
        if OOM_MARKER in body.lower():
            request.oom, request.error, request.outcome = True, OUT_OF_MEMORY, OUT_OF_MEMORY
            await self._send_engine_error(send, True, request, request_id_header)
            return
        request.outcome, request.error_source = ENGINE_ERROR, body
        await send({**start, "headers": [*start.get("headers", ()), request_id_header]})
        await send({"type": "http.response.body", "body": body})
        request.complete = True

    async def _send_engine_error(
        self, send: Send, oom: bool, request: _RequestLog, request_id_header: tuple[bytes, bytes]
    ) -> None:
        if oom:
            request.status = 503
            message = (
                "the engine ran out of GPU memory for this request; retry shortly "
                "(a shorter conversation history also helps)"
            )
            await send_json(send, 503, error_body(503, message), (RETRY_AFTER, request_id_header))
        else:
            request.status = 500
            await send_json(send, 500, error_body(500, "internal error in the serving layer"), (request_id_header,))
        request.complete = True


# What a stream whose engine failed after the headers ends with: the one error shape as an SSE event, as
# vLLM sends an engine error mid-stream, then the stream's usual end.
STREAM_ERROR_END = b"data: " + error_body(500, "internal error in the serving layer") + b"\n\ndata: [DONE]\n\n"


async def _end_with_error(send: Send, stream: bool) -> None:
    """The last body message of a response whose engine raised after its headers went out. A non-streamed
    response is one body message (Starlette's JSONResponse), so its headers are out only with its body."""
    await send({"type": "http.response.body", "body": STREAM_ERROR_END if stream else b"", "more_body": False})


# How a request ended, in its log line (`outcome`); `error` says why, for all but COMPLETED.
COMPLETED = "completed"
REJECTED = "rejected"  # refused by this layer: gate or guard
SHED = "shed"  # refused by the admission check (429): projected to wait past the deadline
ENGINE_REJECTED = "engine_rejected"  # the engine answered 4xx
ENGINE_ERROR = "engine_error"  # the engine answered 5xx, or a stream ended with an error event
OUT_OF_MEMORY = "out_of_memory"
CLIENT_DISCONNECTED = "client_disconnected"
CUT_AT_SHUTDOWN = "cut_at_shutdown"  # the server stopped before the response ended
INCOMPLETE = "incomplete"  # the response ended early for another reason


class _RequestLog:
    """What one inference request's log line says. Token counts and engine timings come from the
    response's `usage` and `metrics` (vLLM's --enable-force-include-usage / --enable-per-request-metrics).
    Parsing waits for the batched log write, off the request's path."""

    __slots__ = (
        "request_id", "path", "warmup", "started", "adapter", "stream", "status", "error", "oom",
        "first_byte_at", "finished_at", "usage_source", "error_source", "outcome", "complete", "disconnected", "cancelled", "logged",
        "projected_wait_ms",
    )  # fmt: skip

    def __init__(self, request_id: str, path: str, warmup: bool, started: float) -> None:
        self.request_id, self.path, self.warmup, self.started = request_id, path, warmup, started
        self.adapter: str | None = None
        self.stream = False
        self.status: int | None = None
        self.error: str | None = None
        self.oom = False
        self.first_byte_at = 0.0  # time.perf_counter() when the answer's first body byte went out
        self.finished_at = 0.0
        self.usage_source = b""
        self.error_source = b""  # an engine error body, parsed for its message when the line is written
        self.outcome: str | None = None
        self.complete = self.disconnected = self.cancelled = self.logged = False
        self.projected_wait_ms: float | None = None  # shed requests: the wait the admission check projected

    def read_tail(self, tail: list[bytes], complete: bool) -> None:
        """tail: the last body messages. A non-streamed response is one JSON message (Starlette's
        JSONResponse); a stream ends with vLLM's usage event, or an error event, then `data: [DONE]`."""
        self.complete = complete
        if not self.stream or self.status is None or self.status >= 300:
            if self.status is not None and self.status >= 400:
                self.outcome, self.error_source = ENGINE_REJECTED, b"".join(tail)
            else:
                self.usage_source = b"".join(tail)
            return
        events = [event for event in b"".join(tail).split(b"\n\n") if event.startswith(b"data: {")]
        if events and events[-1].startswith(b'data: {"error"'):
            self.oom = OOM_MARKER in events[-1].lower()
            self.outcome = OUT_OF_MEMORY if self.oom else ENGINE_ERROR
            self.error = OUT_OF_MEMORY if self.oom else "error event in the stream"
            self.error_source = events[-1][len(b"data: ") :]
        elif events:
            self.usage_source = events[-1][len(b"data: ") :]

    def settle(self, shutting_down: bool = False) -> None:
        """Decides the outcome of a request that ended (or is being cut) without one set on the way."""
        self.finished_at = time.perf_counter()
        if self.outcome is not None:
            return
        if self.complete:
            self.outcome = COMPLETED
        elif self.disconnected:
            self.outcome, self.error = CLIENT_DISCONNECTED, "the client went away before the response ended"
        elif self.cancelled or shutting_down:
            self.outcome, self.error = CUT_AT_SHUTDOWN, "the server stopped before the response ended"
        else:
            self.outcome, self.error = INCOMPLETE, "the response ended early"

    def _usage_and_metrics(self) -> tuple[dict[str, Any], dict[str, Any]]:
        parsed = _json_object(self.usage_source)
        return parsed.get("usage") or {}, parsed.get("metrics") or {}

    def _error_text(self) -> str | None:
        """Ours, or the engine's error type and param: never the engine's message, which may quote the
        request (an exception's text, a validation error's input value; issue 51)."""
        if not self.error_source:
            return self.error
        said = self.error or f"engine answered {self.status}"
        detail = _json_object(self.error_source).get("error")
        if not isinstance(detail, dict) or not isinstance(detail.get("type"), str):
            return said
        param = detail.get("param")
        return f"{said}: {clip(detail['type'])}" + (f" (param {clip(param)})" if isinstance(param, str) else "")

    def fields(self, model_version: str) -> dict[str, Any]:
        usage, metrics = self._usage_and_metrics()
        queue_ms, engine_ttft_ms = metrics.get("queue_time_ms"), metrics.get("time_to_first_token_ms")
        # vLLM times the first token from scheduling; from arrival it is the queue wait plus that.
        ttft_ms = None if queue_ms is None or engine_ttft_ms is None else round(queue_ms + engine_ttft_ms, 1)
        return {
            "request_id": self.request_id,
            "path": self.path,
            "adapter": self.adapter,
            "model_version": model_version,
            "status": self.status,
            "stream": self.stream,
            "warmup": self.warmup,
            "prompt_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
            "queue_wait_ms": queue_ms,
            "ttft_ms": ttft_ms,
            "total_ms": round((self.finished_at - self.started) * 1000, 1),
            "outcome": self.outcome,
            "error": self._error_text(),
            "projected_wait_ms": self.projected_wait_ms,
        }


def _json_object(source: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(source) if source else None
    except (ValueError, RecursionError):
        parsed = None
    return parsed if isinstance(parsed, dict) else {}


async def _nothing() -> None:
    """An awaitable for the messages tracked_send holds back instead of sending."""


async def _read_body(receive: Receive) -> bytes | Rejection | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return TOO_LARGE
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class RequestLogBuffer:
    """Collects finished requests and writes their log lines, and their latency as EMF (serving/latency.py),
    in one batch shortly after, so the JSON work and the write never sit between one request's end and
    the next one's start."""

    def __init__(self, logger: JsonLogger, settings: Settings, admission: Admission) -> None:
        self.logger = logger
        self.admission = admission
        self.model_version = settings.model_version
        self.dimensions = {c.DIM_ENDPOINT: settings.endpoint_name, c.DIM_VARIANT: settings.variant_name}
        self.pending: list[_RequestLog] = []
        self.closed = False

    def add(self, request: _RequestLog) -> None:
        if request.logged:  # already written as cut at shutdown
            return
        request.logged = True
        if self.closed:
            self.pending.append(request)
            self.flush()
            return
        if not self.pending:
            asyncio.get_running_loop().call_later(LOG_FLUSH_SECONDS, self.flush)
        self.pending.append(request)

    def close(self) -> None:
        self.closed = True
        self.flush()

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        lines, latency = [], LatencyValues()
        for request in pending:
            fields = request.fields(self.model_version)
            if (document := self.logger.record("info", "request", **fields)) is not None:
                lines.append(json_line(document))
            if request.outcome == SHED:
                latency.add(shed_wait_ms=request.projected_wait_ms)
            self._teach_admission(request, fields)
            if not request.warmup and request.status is not None and 200 <= request.status < 300:
                ttft, tpot, e2e = request_latency(
                    stream=request.stream,
                    started=request.started,
                    first_byte_at=request.first_byte_at,
                    finished_at=request.finished_at,
                    output_tokens=fields["output_tokens"],
                    completed=fields["outcome"] == COMPLETED,
                )
                latency.add(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e)
        if latency:
            properties = {"ModelVersion": self.model_version}
            documents = latency.documents(self.dimensions, int(time.time() * 1000), properties)
            lines += [json_line(document) for document in documents]
        write_lines(lines)

    def _teach_admission(self, request: _RequestLog, fields: dict[str, Any]) -> None:
        """A completed request's time in a slot, from vLLM's own per-request queue and first-token times."""
        queue_ms, ttft_ms = fields["queue_wait_ms"], fields["ttft_ms"]
        if request.warmup or fields["outcome"] != COMPLETED or queue_ms is None or ttft_ms is None:
            return
        self.admission.observe(fields["total_ms"], queue_ms, ttft_ms)
