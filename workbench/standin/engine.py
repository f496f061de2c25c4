"""A stand-in for `vllm serve` (vLLM 0.33.0), run as a real process (`python -m workbench.standin.engine serve ...`,
or `vllm` on PATH through fakes/vllm.sh) by the container tests, the sandbox and the benchmarks.

Test support only: it is not in the image. Everything the serving layer relies on mirrors the vLLM
0.33.0 wheel's source:

- command line: the flags our supervisor generates, parsed strictly (an unknown flag exits 2, as
  vLLM's argparse does); `--lora-modules` takes every adapter after one flag (LoRAParserAction,
  vllm/entrypoints/common/cli_args.py); `--middleware` may repeat.
- start-up: the port is bound before the model loads and listened on only when the HTTP server
  starts (setup_server then serve_http, vllm/entrypoints/launchers/launcher.py), so during the
  simulated load connections are refused.
- middleware: imported and installed exactly like vllm/entrypoints/serve/middleware/register.py
  (a class through `app.add_middleware`, a coroutine function through `app.middleware("http")`).
- routes and status codes: `/health` and GET/POST `/ping` answer 200, or 503 with an empty body once
  the engine is dead (serve/instrumentator/health.py, serve/sagemaker/api_router.py); `/invocations`
  needs Content-Type application/json (400 otherwise, api_utils.validate_json_request), answers 400 on
  bad JSON, replaces `model` with the X-Amzn-SageMaker-Adapter-Identifier header (inject_adapter_id in
  model-hosting-container-standards: the first of repeated headers, null without one, so a body naming
  an adapter without the header gets the base model) and tries chat, then completion; `/v1/*` never
  read that header; a null or empty `model` is the base model, an unknown one a 404 NotFoundError
  (serve/engine/serving.py); errors use ErrorResponse {"error": {message,type,param,code}}.
- streaming: one SSE event per token, usage on every chunk and a final usage+metrics chunk (the
  effect of --enable-force-include-usage and --enable-per-request-metrics), then `data: [DONE]`;
  an error during a stream is sent as a `data: {"error": ...}` event.
- `/metrics`: Prometheus text with vLLM's names, labels model_name and engine, counters with `_total`,
  and the TTFT/queue-time histograms with vLLM's default buckets (vllm/v1/metrics/loggers.py, buckets.py).
- the start-up heap is frozen for the garbage collector (vLLM's lifespan calls freeze_gc_heap).
- SIGTERM: with --shutdown-timeout N, unfinished requests get up to N seconds, then the server task
  is cancelled and uvicorn's shutdown run, with no lifespan shutdown (serve_http's handle_shutdown).

Test switches (POST /_standin/mode): crash (engine dead: /health 503, process exits after
STANDIN_WATCHDOG_SECONDS like vLLM's watchdog), exit (the process dies at once), stall (tokens stop,
/health stays 200), block (the event loop sleeps for `seconds`), error500, oom (a CUDA out-of-memory error for the next requests),
raise (an exception no route handler answers, reaching the middleware), raise_mid_stream (the same, in a
stream after its second token: the response's headers are out), raise_in_stream (an exception after the
second token that the stream generator catches, logs with its traceback and sends as an error event, as
vLLM's serving_chat.py does: `logger.exception("Error in chat completion stream generator.")`), hold (streams
pause after N tokens until POST /_standin/release), slow (every request's prefill takes `prefill_seconds`
longer: a slow release), normal. Requests still running when the
shutdown timeout ends are aborted, as vLLM's engine shutdown does.
Environment: STANDIN_STARTUP_DELAY (s), STANDIN_TOKEN_INTERVAL (s), STANDIN_MODE, STANDIN_WATCHDOG_SECONDS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib
import inspect
import json
import logging
import os
import signal
import socket
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

# vllm/v1/metrics/buckets.py (0.33.0)
TIME_TO_FIRST_TOKEN_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
REQUEST_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
OOM_MESSAGE = (
    "CUDA out of memory. Tried to allocate 1.98 GiB (GPU 0; 22.20 GiB total capacity; "
    "19.41 GiB already allocated; 892.00 MiB free; 20.81 GiB reserved in total by PyTorch)"
)
# EngineDeadError.CLIENT_MESSAGE-like text (vllm/v1/engine/exceptions.py).
ENGINE_DEAD_MESSAGE = "EngineCore encountered an issue. See stack trace (above) for the root cause."
ADAPTER_HEADER = "x-amzn-sagemaker-adapter-identifier"
MODES = (
    "normal", "crash", "exit", "stall", "error500", "oom", "raise", "raise_mid_stream", "raise_in_stream", "hold",
    "block", "slow",
)  # fmt: skip


# vllm/logger.py's default configuration: the `vllm` logger, one handler writing to stdout, no propagation.
VLLM_LOGGER = logging.getLogger("vllm.entrypoints.openai.serving_chat")


def configure_vllm_logging() -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s"))
    vllm = logging.getLogger("vllm")
    vllm.addHandler(handler)
    vllm.setLevel(logging.DEBUG)
    vllm.propagate = False


def error_response(status: int, message: str, err_type: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": err_type, "param": param, "code": status}}, status_code=status
    )


class EngineError(Exception):
    def __init__(self, message: str, err_type: str = "InternalServerError") -> None:
        super().__init__(message)
        self.err_type = err_type


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        for index, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[index] += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out = [f"# TYPE {name} histogram"]
        out += [
            f'{name}_bucket{{{labels},le="{b}"}} {float(c)}' for b, c in zip(self.buckets, self.counts, strict=True)
        ]
        out += [
            f'{name}_bucket{{{labels},le="+Inf"}} {float(self.count)}',
            f"{name}_count{{{labels}}} {float(self.count)}",
            f"{name}_sum{{{labels}}} {self.total}",
        ]
        return out


class FakeEngine:
    """Continuous batching in miniature: max_num_seqs running, the rest waiting, one token per interval."""

    def __init__(self, served_model: str, adapters: list[str], max_num_seqs: int, token_interval: float) -> None:
        self.served_model = served_model
        self.adapters = adapters
        self.token_interval = token_interval
        self.slots = asyncio.Semaphore(max_num_seqs)
        self.running = self.waiting = 0
        self.mode = os.environ.get("STANDIN_MODE", "normal")
        self.prefill_seconds = 0.0  # mode "slow": added before each request's first token
        self.hold_after: int | None = None
        self.released = asyncio.Event()
        self.unstalled = asyncio.Event()
        self.dead = False
        self.created = time.time()
        self.prefix_queries = self.prefix_hits = self.prompt_tokens = self.generation_tokens = 0
        self.preemptions = 0
        self.request_success: Counter[str] = Counter()
        self.requests_by_model: Counter[str] = Counter()
        self.seen_prefixes: set[tuple[str, ...]] = set()
        self.ttft = Histogram(TIME_TO_FIRST_TOKEN_BUCKETS)
        self.queue_time = Histogram(REQUEST_LATENCY_BUCKETS)
        self.e2e = Histogram(REQUEST_LATENCY_BUCKETS)

    @property
    def unfinished(self) -> int:
        return self.running + self.waiting

    def set_mode(self, mode: str, hold_after_tokens: int | None, prefill_seconds: float = 0.0) -> None:
        self.mode = mode
        self.hold_after = hold_after_tokens if mode == "hold" else None
        self.prefill_seconds = prefill_seconds if mode == "slow" else 0.0
        self.released.clear()
        if mode != "stall":
            self.unstalled.set()
            self.unstalled = asyncio.Event()
        if mode == "crash":
            self.dead = True

    def abort_all(self) -> None:
        """What vLLM's engine shutdown does to requests still running when --shutdown-timeout ends."""
        self.dead = True
        self.released.set()
        self.unstalled.set()

    def admit(self, model: str, messages: list | None, prompt_text: str) -> int:
        """Counts the request, simulates the prefix cache, returns the prompt's token count."""
        if self.dead:
            raise EngineError(ENGINE_DEAD_MESSAGE)
        if self.mode == "error500":
            raise EngineError("Internal server error")
        if self.mode == "raise":  # an exception no handler of the server answers; its message quotes the prompt
            raise RuntimeError(f"unexpected engine state for {prompt_text!r}")
        self.requests_by_model[model] += 1
        tokens = len(prompt_text) // 4 + 1
        self.prompt_tokens += tokens
        self.prefix_queries += tokens
        if messages:
            keys = [
                (model, *(json.dumps(m, sort_keys=True) for m in messages[:length]))
                for length in range(1, len(messages) + 1)
            ]
            cached = max((length for length, key in enumerate(keys, 1) if key in self.seen_prefixes), default=0)
            self.prefix_hits += sum(len(str(m.get("content", ""))) // 4 for m in messages[:cached])
            self.seen_prefixes.update(keys)
        return tokens

    async def generate(self, max_tokens: int, timings: dict[str, float]) -> AsyncIterator[str]:
        arrival = time.perf_counter()
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        scheduled = time.perf_counter()
        timings["queue"] = scheduled - arrival
        self.queue_time.observe(scheduled - arrival)
        oom = self.mode == "oom"
        hold_after = self.hold_after
        try:
            if self.prefill_seconds:
                await asyncio.sleep(self.prefill_seconds)
            for index in range(max_tokens):
                if hold_after is not None and index == hold_after:
                    await self.released.wait()
                if self.mode == "stall" and not self.dead:
                    await self.unstalled.wait()
                await asyncio.sleep(self.token_interval)
                if self.dead:
                    raise EngineError(ENGINE_DEAD_MESSAGE)
                if index == 0:
                    timings["first_token"] = time.perf_counter() - scheduled
                    self.ttft.observe(time.perf_counter() - arrival)
                elif oom:
                    raise EngineError(OOM_MESSAGE)
                self.generation_tokens += 1
                yield f"tok{index} "
            self.request_success["length"] += 1
        finally:
            self.running -= 1
            self.slots.release()
            timings["total"] = time.perf_counter() - scheduled
            self.e2e.observe(time.perf_counter() - arrival)

    def exposition(self) -> str:
        labels = f'engine="0",model_name="{self.served_model}"'
        lines = []
        for name, value, doc in (
            ("vllm:num_requests_running", self.running, "Number of requests in model execution batches."),
            ("vllm:num_requests_waiting", self.waiting, "Number of requests waiting to be processed."),
            ("vllm:kv_cache_usage_perc", min(1.0, self.running / 128), "KV-cache usage. 1 means 100 percent usage."),
        ):
            lines += [f"# HELP {name} {doc}", f"# TYPE {name} gauge", f"{name}{{{labels}}} {float(value)}"]
        for name, value in (
            ("vllm:prefix_cache_queries", self.prefix_queries),
            ("vllm:prefix_cache_hits", self.prefix_hits),
            ("vllm:num_preemptions", self.preemptions),
            ("vllm:prompt_tokens", self.prompt_tokens),
            ("vllm:generation_tokens", self.generation_tokens),
        ):
            lines += [
                f"# TYPE {name} counter",
                f"{name}_total{{{labels}}} {float(value)}",
                f"{name}_created{{{labels}}} {self.created}",
            ]
        lines.append("# TYPE vllm:request_success counter")
        lines += [
            f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} {float(count)}'
            for reason, count in sorted(self.request_success.items())
        ]
        lines += self.ttft.lines("vllm:time_to_first_token_seconds", labels)
        lines += self.queue_time.lines("vllm:request_queue_time_seconds", labels)
        lines += self.e2e.lines("vllm:e2e_request_latency_seconds", labels)
        return "\n".join(lines) + "\n"


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # As vLLM's lifespan does (freeze_gc_heap, vllm/utils/gc_utils.py): the start-up heap is frozen
    # so that collections during serving skip it.
    for generation in (0, 1, 2):
        gc.collect(generation)
    gc.freeze()
    yield


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def per_request_metrics(timings: dict[str, float], tokens: int) -> dict:
    first, total = timings.get("first_token", 0.0), timings.get("total", 0.0)
    return {
        "time_to_first_token_ms": round(first * 1000, 3),
        "generation_time_ms": round((total - first) * 1000, 3),
        "queue_time_ms": round(timings.get("queue", 0.0) * 1000, 3),
        "mean_itl_ms": round((total - first) * 1000 / (tokens - 1), 3) if tokens > 1 else None,
        "tokens_per_second": round(tokens / total, 3) if total else None,
    }


async def read_json(request: Request) -> dict | JSONResponse:
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        return error_response(400, f"JSON decode error: {exc}", "Bad Request")
    if not isinstance(body, dict):
        return error_response(400, "Input should be a valid dictionary", "Bad Request")
    return body


@dataclass
class Answer:
    """One admitted completion (chat or not): the fields every chunk, or the whole response, repeats."""

    chat: bool
    model: str
    prompt_tokens: int
    prompt_text: str = ""  # quoted by the exception of mode raise_mid_stream, as an engine's message may be
    timings: dict[str, float] = field(default_factory=dict)  # filled by the engine as it generates
    request_id: str = field(init=False)
    created: int = field(init=False)

    def __post_init__(self) -> None:
        self.request_id = f"{'chatcmpl' if self.chat else 'cmpl'}-{uuid.uuid4().hex}"
        self.created = int(time.time())

    @property
    def chunk_object(self) -> str:
        return "chat.completion.chunk" if self.chat else "text_completion"

    def choice(self, text: str, finish: str | None, first: bool = False) -> dict:
        if self.chat:
            delta = {"role": "assistant", "content": text} if first else {"content": text}
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}

    async def events(self, engine: FakeEngine, max_tokens: int) -> AsyncIterator[str]:
        """The SSE stream: a chunk per token with usage, a final usage+metrics chunk, then [DONE]."""
        obj, produced = self.chunk_object, 0
        try:
            async for token in engine.generate(max_tokens, self.timings):
                produced += 1
                chunk = {
                    "id": self.request_id, "object": obj, "created": self.created, "model": self.model,
                    "choices": [self.choice(token, None, first=produced == 1)],
                    "usage": usage(self.prompt_tokens, produced),
                }  # fmt: skip
                yield f"data: {json.dumps(chunk)}\n\n"
                if produced == 2 and engine.mode in ("raise_mid_stream", "raise_in_stream"):
                    raise RuntimeError(f"unexpected engine state for {self.prompt_text!r}")
            final = {"id": self.request_id, "object": obj, "created": self.created, "model": self.model, "choices": []}
            final["usage"] = usage(self.prompt_tokens, produced)
            final["metrics"] = per_request_metrics(self.timings, produced)
            yield f"data: {json.dumps(final)}\n\n"
        except EngineError as exc:
            error = {"error": {"message": str(exc), "type": exc.err_type, "param": None, "code": 500}}
            yield f"data: {json.dumps(error)}\n\n"
        except RuntimeError as exc:
            if engine.mode != "raise_in_stream":
                raise  # mode raise_mid_stream: nothing catches it before the middleware
            VLLM_LOGGER.exception("Error in chat completion stream generator.")
            error = {"error": {"message": str(exc), "type": "InternalServerError", "param": None, "code": 500}}
            yield f"data: {json.dumps(error)}\n\n"
        yield "data: [DONE]\n\n"

    async def whole(self, engine: FakeEngine, max_tokens: int) -> Response:
        """The non-streaming response, once every token is generated."""
        try:
            tokens = [token async for token in engine.generate(max_tokens, self.timings)]
        except EngineError as exc:
            return error_response(500, str(exc), exc.err_type)
        text_out = "".join(tokens)
        if self.chat:
            choices = [{"index": 0, "message": {"role": "assistant", "content": text_out}, "finish_reason": "length"}]
        else:
            choices = [{"index": 0, "text": text_out, "finish_reason": "length"}]
        return JSONResponse(
            {
                "id": self.request_id,
                "object": "chat.completion" if self.chat else "text_completion",
                "created": self.created,
                "model": self.model,
                "choices": choices,
                "usage": usage(self.prompt_tokens, len(tokens)),
                "metrics": per_request_metrics(self.timings, len(tokens)),
            }
        )


class Completions:
    """Chat and text completions as vLLM's serving layer answers them, over the served models."""

    def __init__(self, args: argparse.Namespace, engine: FakeEngine) -> None:
        self.base_model = args.served_model_name
        self.served = {args.served_model_name: None, **{name: path for name, path in args.lora_modules}}
        self.engine = engine

    def resolve_model(self, body: dict) -> str | JSONResponse:
        model = body.get("model") or self.base_model
        if model not in self.served:
            names = self.base_model
            return error_response(
                404, f"The model `{model}` does not exist. Valid aliases: {names}.", "NotFoundError", "model"
            )
        return model

    async def complete(self, body: dict, chat: bool) -> Response:
        model = self.resolve_model(body)
        if isinstance(model, JSONResponse):
            return model
        messages = body.get("messages") if chat else None
        text = "".join(str(m.get("content", "")) for m in messages) if messages else str(body.get("prompt", ""))
        try:
            prompt_tokens = self.engine.admit(model, messages, text)
        except EngineError as exc:
            return error_response(500, str(exc), exc.err_type)
        max_tokens = body.get("max_tokens") or 16
        if not isinstance(max_tokens, int):  # pydantic's validation error, answered 400 by vLLM
            return error_response(400, "max_tokens: Input should be a valid integer", "BadRequestError", "max_tokens")
        answer = Answer(chat, model, prompt_tokens, text)
        if body.get("stream") is True:
            return StreamingResponse(answer.events(self.engine, max_tokens), media_type="text/event-stream")
        return await answer.whole(self.engine, max_tokens)


def add_serving_routes(app: FastAPI, completions: Completions) -> None:
    """Health, the OpenAI-compatible routes, SageMaker's /invocations, models and metrics."""
    engine = completions.engine

    async def health() -> Response:
        return Response(status_code=503 if engine.dead else 200)

    app.add_api_route("/health", health, methods=["GET"])
    app.add_api_route("/ping", health, methods=["GET", "POST"])

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body = await read_json(request)
        if isinstance(body, JSONResponse):
            return body
        if not isinstance(body.get("messages"), list):
            return error_response(400, "Field required: messages", "Bad Request", "body.messages")
        return await completions.complete(body, chat=True)

    @app.post("/v1/completions")
    async def text_completions(request: Request) -> Response:
        body = await read_json(request)
        if isinstance(body, JSONResponse):
            return body
        if "prompt" not in body:
            return error_response(400, "Field required: prompt", "Bad Request", "body.prompt")
        return await completions.complete(body, chat=False)

    @app.post("/invocations")
    async def invocations(request: Request) -> Response:
        media_type = request.headers.get("content-type", "").split(";", 1)[0].lower()
        if media_type != "application/json":
            message = "Unsupported Media Type: Only 'application/json' is allowed"
            return error_response(400, message, "Bad Request")
        body = await read_json(request)
        if isinstance(body, JSONResponse):
            return body
        body["model"] = request.headers.get(ADAPTER_HEADER)
        if isinstance(body.get("messages"), list):
            return await completions.complete(body, chat=True)
        if "prompt" in body:
            return await completions.complete(body, chat=False)
        message = (
            "Cannot find suitable handler for request. Expected one of: ['ChatCompletionRequest', 'CompletionRequest']"
        )
        return error_response(400, message, "BadRequestError")

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": name, "object": "model"} for name in completions.served]}

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(engine.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")


def add_switch_routes(app: FastAPI, engine: FakeEngine) -> None:
    """The tests' switches under /_standin (see the module docstring)."""

    @app.post("/_standin/mode")
    async def set_mode(request: Request) -> dict:
        body = await request.json()
        if body["mode"] not in MODES:
            return {"error": f"unknown mode {body['mode']}"}
        if body["mode"] == "exit":
            os._exit(1)
        if body["mode"] == "block":  # the whole event loop stops, as a long synchronous step would stop it
            time.sleep(float(body["seconds"]))
            return {"mode": engine.mode}
        engine.set_mode(body["mode"], body.get("hold_after_tokens"), float(body.get("prefill_seconds", 0)))
        if body["mode"] == "crash":
            asyncio.get_running_loop().call_later(
                float(os.environ.get("STANDIN_WATCHDOG_SECONDS", "5")), app.state.request_exit
            )
        return {"mode": engine.mode}

    @app.post("/_standin/release")
    async def release() -> dict:
        engine.released.set()
        return {"released": True}

    @app.get("/_standin/stats")
    async def stats() -> dict:
        return {
            "requests_by_model": dict(engine.requests_by_model),
            "prefix_cache_hits": engine.prefix_hits,
            "running": engine.running,
            "waiting": engine.waiting,
        }


def install_middleware(app: FastAPI, middleware: list[str]) -> None:
    """As vllm/entrypoints/serve/middleware/register.py installs --middleware."""
    for name in middleware:
        module_path, object_name = name.rsplit(".", 1)
        imported = getattr(importlib.import_module(module_path), object_name)
        if inspect.isclass(imported):
            app.add_middleware(imported)
        elif inspect.iscoroutinefunction(imported):
            app.middleware("http")(imported)
        else:
            raise ValueError(f"Invalid middleware {name}. Must be a function or a class.")


def create_app(args: argparse.Namespace, engine: FakeEngine) -> FastAPI:
    app = FastAPI(lifespan=lifespan)
    add_serving_routes(app, Completions(args, engine))
    add_switch_routes(app, engine)
    install_middleware(app, args.middleware)
    return app


class NoSignalServer(uvicorn.Server):
    """Like vLLM's: uvicorn installs no signal handlers; shutdown is driven by our own."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        yield


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="vllm")
    sub = parser.add_subparsers(dest="subparser", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("model_tag")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--api-server-count", type=int, default=1)
    serve.add_argument("--served-model-name", default=None)
    serve.add_argument("--quantization", default=None)
    serve.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    serve.add_argument("--max-model-len", type=int, default=None)
    serve.add_argument("--max-num-seqs", type=int, default=128)
    serve.add_argument("--max-num-batched-tokens", type=int, default=None)
    serve.add_argument("--block-size", type=int, default=16)
    serve.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None)
    serve.add_argument("--enable-lora", action=argparse.BooleanOptionalAction, default=False)
    serve.add_argument("--max-loras", type=int, default=1)
    serve.add_argument("--max-lora-rank", type=int, default=16, choices=(1, 8, 16, 32, 64, 128, 256, 320, 512))
    serve.add_argument("--lora-modules", nargs="+", default=[])
    serve.add_argument("--middleware", action="append", default=[])
    serve.add_argument("--enable-force-include-usage", action=argparse.BooleanOptionalAction, default=False)
    serve.add_argument("--enable-per-request-metrics", action=argparse.BooleanOptionalAction, default=False)
    serve.add_argument("--disable-uvicorn-access-log", action=argparse.BooleanOptionalAction, default=False)
    serve.add_argument(
        "--uvicorn-log-level", default="info", choices=("critical", "error", "warning", "info", "debug", "trace")
    )
    serve.add_argument("--shutdown-timeout", type=int, default=0)
    args = parser.parse_args(argv)
    args.served_model_name = args.served_model_name or args.model_tag
    modules = []
    for item in args.lora_modules:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"Invalid JSON format for --lora-modules: {item}")
        modules.append((name, path))
    args.lora_modules = modules
    if args.lora_modules and not args.enable_lora:
        parser.error("--lora-modules needs --enable-lora")
    return args


async def serve(args: argparse.Namespace, sock: socket.socket) -> None:
    token_interval = float(os.environ.get("STANDIN_TOKEN_INTERVAL", "0.005"))
    engine = FakeEngine(
        args.served_model_name, [name for name, _ in args.lora_modules], args.max_num_seqs, token_interval
    )
    app = create_app(args, engine)
    config = uvicorn.Config(
        app,
        log_level=args.uvicorn_log_level,
        access_log=not args.disable_uvicorn_access_log,
        timeout_keep_alive=5,
    )
    server = NoSignalServer(config)
    app.state.request_exit = lambda: setattr(server, "should_exit", True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def handle_shutdown() -> None:
        await stop.wait()
        deadline = time.monotonic() + args.shutdown_timeout
        while engine.unfinished and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        engine.abort_all()
        # As serve_http does: stop the server task outright (its lifespan shutdown never runs), then
        # uvicorn's shutdown closes connections; whatever is left is cancelled when the loop ends.
        server.should_exit = True
        server_task.cancel()

    server_task = asyncio.create_task(server.serve(sockets=[sock]))
    shutdown = asyncio.create_task(handle_shutdown())
    try:
        await server_task
    except asyncio.CancelledError:
        await server.shutdown()
    finally:
        shutdown.cancel()


def main(argv: list[str]) -> None:
    configure_vllm_logging()  # vLLM configures its logger when vllm.logger is imported, before any app exists
    args = parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host or "", args.port))
    # The model "loads" with the port bound but not listening, as in vLLM.
    time.sleep(float(os.environ.get("STANDIN_STARTUP_DELAY", "0")))
    asyncio.run(serve(args, sock))


if __name__ == "__main__":
    main(sys.argv[1:])
