"""A minimal HTTP/1.1 client for the supervisor's calls to the engine on 127.0.0.1.

Standard library only, so the serving package installs nothing into vLLM's Python environment and
can never conflict with its pinned dependencies. One connection per call (`Connection: close`):
the supervisor makes a few calls a second at most.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any


class LoopbackError(Exception):
    """The call failed before a complete response arrived (refused, reset, timed out, malformed)."""


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


class LoopbackClient:
    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, port

    async def get(self, path: str, timeout: float) -> Response:
        return await self.request("GET", path, timeout=timeout)

    async def post_json(self, path: str, payload: Any, headers: dict[str, str], timeout: float) -> Response:
        body = json.dumps(payload).encode()
        return await self.request("POST", path, body, {"Content-Type": "application/json", **headers}, timeout)

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None, timeout: float = 5.0
    ) -> Response:
        try:
            # asyncio.timeout, not wait_for: CPython 3.11's wait_for returns the inner result when it is cancelled
            # just as the inner call ends (Lib/asyncio/tasks.py `wait_for`, fixed in 3.12: gh-86296), so the
            # supervisor's SIGTERM could be lost while it polled a loading engine's /health.
            async with asyncio.timeout(timeout):
                return await self._exchange(method, path, body, headers or {})
        except TimeoutError as exc:
            raise LoopbackError(f"{method} {path}: no complete answer within {timeout:g} s") from exc
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            raise LoopbackError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    async def _exchange(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Response:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Connection: close"]
            head += [f"{name}: {value}" for name, value in headers.items()]
            head.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
            await writer.drain()
            raw = await reader.read()  # the server closes the connection after the response
        finally:
            writer.close()
        return _parse(raw)


def _parse(raw: bytes) -> Response:
    head, separator, payload = raw.partition(b"\r\n\r\n")
    if not separator:
        raise ValueError("incomplete response head")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        payload = _dechunk(payload)
    elif "content-length" in headers and len(payload) < int(headers["content-length"]):
        raise ValueError("response body shorter than its Content-Length")
    return Response(status, headers, payload)


def _dechunk(payload: bytes) -> bytes:
    chunks, position = [], 0
    while True:
        line_end = payload.index(b"\r\n", position)
        size = int(payload[position:line_end].split(b";", 1)[0], 16)
        if size == 0:
            return b"".join(chunks)
        start = line_end + 2
        chunks.append(payload[start : start + size])
        position = start + size + 2
