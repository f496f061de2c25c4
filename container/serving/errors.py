"""The one error shape for everything the serving layer answers itself.

It is vLLM's own shape (ErrorResponse/ErrorInfo in vllm/entrypoints/serve/engine/protocol.py, 0.33.0),
so a client sees the same JSON whether our guard or the engine refused the request:
    {"error": {"message": str, "type": str, "param": str | null, "code": int}}
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]

# Client input quoted back in an error body or a log line is cut to this many characters: a 1 MB
# model name must not become a 1 MB log event (CloudWatch Logs cuts events at 256 KB).
ECHO_LIMIT = 200

ERROR_TYPES = {
    400: "BadRequestError",
    413: "RequestEntityTooLargeError",
    429: "TooManyRequestsError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """At most `limit` characters of client input, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def error_body(status: int, message: str, param: str | None = None) -> bytes:
    error = {"message": message, "type": ERROR_TYPES[status], "param": param, "code": status}
    return json.dumps({"error": error}).encode()


async def send_json(send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_error(
    send: Send, status: int, message: str, param: str | None = None, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    await send_json(send, status, error_body(status, message, param), headers)
