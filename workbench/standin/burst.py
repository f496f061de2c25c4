"""A burst of concurrent streamed requests, each one's answer timed as the client sees it: the admission
tests send it to the stand-in (tests/container) and to the CPU vLLM (tests/engine)."""

from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Answer:
    """One request of the burst; times in seconds from the burst's start (time.monotonic)."""

    path: str
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    error: dict[str, Any] | None = None  # the JSON body of a non-200 answer
    answered_at: float = 0.0  # response headers received
    first_token_at: float | None = None  # first event of a 200 stream
    finished_at: float = 0.0
    events: int = 0  # events with choices received
    done: bool = False  # `data: [DONE]` received
    usage_tokens: int | None = None  # completion_tokens of the stream's last usage


def stream_body(path: str, max_tokens: int, content: str) -> dict[str, Any]:
    body: dict[str, Any] = {"max_tokens": max_tokens, "stream": True, "ignore_eos": True}
    if path == "/v1/completions":
        return {**body, "prompt": content}
    return {**body, "messages": [{"role": "user", "content": content}]}


def _read_event(answer: Answer, data: str, started: float) -> None:
    if data == "[DONE]":
        answer.done = True
        return
    event = json.loads(data)
    if event.get("choices"):  # vLLM's first event (the role) comes with the first token
        answer.events += 1
        if answer.first_token_at is None:
            answer.first_token_at = time.monotonic() - started
    if event.get("usage"):
        answer.usage_tokens = event["usage"].get("completion_tokens")


async def _one(client: httpx.AsyncClient, path: str, body: dict[str, Any], started: float) -> Answer:
    answer = Answer(path)
    async with client.stream("POST", path, json=body) as response:
        answer.status, answer.headers = response.status_code, dict(response.headers)
        answer.answered_at = time.monotonic() - started
        if response.status_code != 200:
            answer.error = json.loads(await response.aread())
        else:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    _read_event(answer, line[len("data: ") :], started)
    answer.finished_at = time.monotonic() - started
    return answer


async def _burst(base_url: str, paths: list[str], max_tokens: int, content: str, timeout: float) -> list[Answer]:
    limits = httpx.Limits(max_connections=len(paths), max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) as client:
        started = time.monotonic()
        return list(
            await asyncio.gather(
                *(_one(client, path, stream_body(path, max_tokens, content), started) for path in paths)
            )
        )


def burst(
    base_url: str, paths: list[str], max_tokens: int, content: str = "Recommend a manga.", timeout: float = 120.0
) -> list[Answer]:
    """One streamed request per entry of `paths`, all sent at once; answers in the same order."""
    return asyncio.run(_burst(base_url, paths, max_tokens, content, timeout))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
