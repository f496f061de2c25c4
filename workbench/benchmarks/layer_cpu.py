"""The middleware's own CPU per request, measured in this process around a null engine.

End-to-end CPU figures include the load generator's share of a 2-core machine and the engine's own
noise; here nothing else runs: a null ASGI app that reads the body and streams a 64-token answer in
vLLM's message shapes is called directly, alternately bare and wrapped in ServingMiddleware, and the
difference of time.thread_time() per request is the layer's cost (guards, state check, per-message
pass-through, and the request log line, whose formatting is flushed inside the measured time;
only the final write to stdout is left out).

    .venv/bin/python -m workbench.benchmarks.layer_cpu [--rounds 9] [--requests 3000]

prints that cost, and what the admission check adds to it: two middlewares, one with
SERVING_ADMISSION_DEADLINE_MS set and one without, measured alternately the same way (requests one
at a time, so the check always finds a free slot: the path every request takes when nobody is shed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from container.serving import middleware as serving_middleware
from container.serving.contract import ENV_ADMISSION_DEADLINE_MS
from container.serving.state import ServingState, StateRecord, write_state
from workbench.standin.harness import free_port, serving_env

CHUNK = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"base","choices":[{"index":0,'
    b'"delta":{"content":"tok "},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":3000,'
    b'"completion_tokens":1,"total_tokens":3001}}\n\n'
)
FINAL = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"base","choices":[],'
    b'"usage":{"prompt_tokens":3000,"completion_tokens":64,"total_tokens":3064},"metrics":{"time_to_first_token_ms":'
    b'20.1,"generation_time_ms":1200.5,"queue_time_ms":0.4,"mean_itl_ms":19.1,"tokens_per_second":52.1}}\n\n'
)


def null_engine(tokens: int):
    async def app(scope: dict[str, Any], receive, send) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for _ in range(tokens):
            await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
        for body in (FINAL, b"data: [DONE]\n\n"):
            await send({"type": "http.response.body", "body": body, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def layer_cpu_per_request(body: bytes, tokens: int, requests: int, rounds: int) -> list[float]:
    """Seconds of CPU the middleware adds per request, one figure per round."""
    app = null_engine(tokens)
    return _added_cpu(body, requests, rounds, lambda: app, lambda: serving_middleware.ServingMiddleware(app))


def admission_cpu_per_request(body: bytes, tokens: int, requests: int, rounds: int) -> list[float]:
    """Seconds of CPU the admission check adds per request to the middleware, one figure per round."""
    app = null_engine(tokens)
    os.environ.pop(ENV_ADMISSION_DEADLINE_MS, None)

    def with_admission():
        os.environ[ENV_ADMISSION_DEADLINE_MS] = "2000"
        try:
            return serving_middleware.ServingMiddleware(app)
        finally:
            del os.environ[ENV_ADMISSION_DEADLINE_MS]

    return _added_cpu(body, requests, rounds, lambda: serving_middleware.ServingMiddleware(app), with_admission)


def _added_cpu(body: bytes, requests: int, rounds: int, base_of, wrapped_of) -> list[float]:
    """CPU per request of the ASGI app `wrapped_of()` makes minus `base_of()`'s (factories called once the
    environment is set), alternating which runs first."""
    workdir = Path(tempfile.mkdtemp(prefix="layer-cpu-"))
    env = serving_env(workdir, free_port())
    os.environ.update({name: value for name, value in env.items() if name.startswith("SERVING_")})
    write_state(env["SERVING_STATE_FILE"], StateRecord(ServingState.READY, "benchmark"))
    serving_middleware.write_lines = lambda lines: list(lines)  # format every line, write none
    app, wrapped = base_of(), wrapped_of()
    scope = {
        "type": "http", "path": "/invocations", "method": "POST", "client": ("10.0.0.1", 40000),
        "headers": [(b"host", b"x"), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    }  # fmt: skip

    async def send(message: dict[str, Any]) -> None:
        pass

    def receiver():
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                await asyncio.sleep(3600)  # no disconnect while the response streams
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        return receive

    async def cpu_per_request(target) -> float:
        started = time.thread_time()
        for _ in range(requests):
            await target(scope, receiver(), send)
        if hasattr(target, "request_log"):
            target.request_log.flush()
        return (time.thread_time() - started) / requests

    async def measure() -> list[float]:
        for _ in range(2):  # warm caches and the allocator
            await cpu_per_request(app)
            await cpu_per_request(wrapped)
        added = []
        for round_number in range(rounds):
            pair = (app, wrapped) if round_number % 2 == 0 else (wrapped, app)
            cost = {target: await cpu_per_request(target) for target in pair}
            added.append(cost[wrapped] - cost[app])
        return added

    return asyncio.run(measure())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    from workbench.benchmarks.bodies import request_body  # noqa: PLC0415 - the benchmark's own bodies

    body = request_body("realistic", 64)
    for what, measure in (("middleware", layer_cpu_per_request), ("admission check", admission_cpu_per_request)):
        added = measure(body, 64, args.requests, args.rounds)
        print(
            f"{what}: {statistics.median(added) * 1e6:+.1f} us CPU per request, median of {args.rounds} rounds "
            f"({min(added) * 1e6:+.1f} to {max(added) * 1e6:+.1f}), {args.requests} requests each"
        )


if __name__ == "__main__":
    main()
