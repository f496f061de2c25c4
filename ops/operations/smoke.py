"""`smoke`: one chat completion per LoRA adapter, plain and streamed, checking shape and timing.

The adapter goes in the OpenAI `model` field (vLLM serves each LoRA under its name): SageMaker sets
`X-Amzn-SageMaker-Adapter-Identifier` only for adapter inference components. `TargetVariant` pins a request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from config.routing import PREFIX_AWARE_ID_PARAMETER, conversation_id
from ops.operations.errors import CALLER_PROBLEMS, error_code, error_message
from ops.operations.output import one_line

DEFAULT_PROMPT = "Recommend one manga for a reader who loved Frieren, in one sentence."


@dataclass(frozen=True)
class SmokeRequest:
    endpoint: str
    adapter: str
    prompt: str
    max_tokens: int
    variant: str | None  # None lets the endpoint's weights pick
    # The conversation's PrefixAwareId, sent on every request (config.routing: the client contract); the
    # plain and the streamed request of one adapter are one conversation's two turns.
    conversation: str = field(default_factory=conversation_id)

    def body(self, stream: bool) -> bytes:
        payload: dict[str, Any] = {
            "model": self.adapter,
            "messages": [{"role": "user", "content": self.prompt}],
            "max_tokens": self.max_tokens,
            "temperature": 0,
        }
        if stream:
            payload |= {"stream": True, "stream_options": {"include_usage": True}}
        return json.dumps(payload).encode()

    def params(self, stream: bool) -> dict[str, Any]:
        params = {
            "EndpointName": self.endpoint,
            "Body": self.body(stream),
            "ContentType": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            PREFIX_AWARE_ID_PARAMETER: self.conversation,
        }
        return params | ({"TargetVariant": self.variant} if self.variant else {})


@dataclass(frozen=True)
class SmokeResult:
    adapter: str
    mode: str  # "invoke" or "stream"
    variant: str  # the variant that answered
    latency: float  # seconds, request sent to response complete
    first_token: float | None  # seconds to the first content chunk (streaming only)
    tokens: int | None
    problem: str | None

    @property
    def passed(self) -> bool:
        return self.problem is None

    def row(self) -> list[object]:
        ttft = "-" if self.first_token is None else f"{self.first_token * 1000:.0f} ms"
        result = "ok" if self.passed else f"FAIL: {one_line(self.problem or '', limit=120)}"
        tokens = "-" if self.tokens is None else self.tokens
        return [self.adapter, self.mode, self.variant, f"{self.latency * 1000:.0f} ms", ttft, tokens, result]


def smoke_adapter(runtime: Any, request: SmokeRequest, clock: Callable[[], float]) -> list[SmokeResult]:
    return [_invoke(runtime, request, clock), _stream(runtime, request, clock)]


def _invoke(runtime: Any, request: SmokeRequest, clock: Callable[[], float]) -> SmokeResult:
    started = clock()
    try:
        response = runtime.invoke_endpoint(**request.params(stream=False))
        raw = response["Body"].read()
    except ClientError as error:
        return _failed(request, "invoke", clock() - started, error)
    latency = clock() - started
    variant = response.get("InvokedProductionVariant", "?")
    try:
        payload = json.loads(raw)
    except ValueError:
        return SmokeResult(request.adapter, "invoke", variant, latency, None, None, f"body is not JSON: {raw[:80]!r}")
    problem = _completion_problem(payload, request.adapter)
    tokens = payload.get("usage", {}).get("completion_tokens") if isinstance(payload, dict) else None
    return SmokeResult(request.adapter, "invoke", variant, latency, None, tokens, problem)


def _completion_problem(payload: Any, adapter: str) -> str | None:
    if not isinstance(payload, dict) or payload.get("object") != "chat.completion":
        return f"not a chat.completion: {str(payload)[:80]}"
    choices = payload.get("choices") or [{}]
    content = choices[0].get("message", {}).get("content")
    if not isinstance(content, str) or not content.strip():
        return "the completion has no message content"
    if payload.get("model") != adapter:
        return f"answered by model '{payload.get('model')}', not adapter '{adapter}'"
    return None


def _stream(runtime: Any, request: SmokeRequest, clock: Callable[[], float]) -> SmokeResult:
    started = clock()
    reader = ServerSentEvents()
    first_token = None
    try:
        response = runtime.invoke_endpoint_with_response_stream(**request.params(stream=True))
        for event in response["Body"]:
            for chunk in reader.feed(event.get("PayloadPart", {}).get("Bytes", b"")):
                if first_token is None and _has_content(chunk):
                    first_token = clock() - started
    except ClientError as error:  # botocore raises ModelStreamError events as ClientErrors too
        return _failed(request, "stream", clock() - started, error)
    latency = clock() - started
    variant = response.get("InvokedProductionVariant", "?")
    problem = _stream_problem(reader, first_token)
    return SmokeResult(request.adapter, "stream", variant, latency, first_token, reader.completion_tokens, problem)


def _stream_problem(reader: ServerSentEvents, first_token: float | None) -> str | None:
    if reader.problem:
        return reader.problem
    if first_token is None:
        return "the stream carried no content"
    if not reader.done:
        return "the stream ended without data: [DONE]"
    return None


def _has_content(chunk: dict[str, Any]) -> bool:
    return any(choice.get("delta", {}).get("content") for choice in chunk.get("choices", []))


class ServerSentEvents:
    """Reassembles `data:` events from payload parts, which may split an event anywhere."""

    def __init__(self) -> None:
        self.buffer = b""
        self.done = False
        self.problem: str | None = None
        self.completion_tokens: int | None = None

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self.buffer += data.replace(b"\r\n", b"\n")
        chunks = []
        while b"\n\n" in self.buffer:
            frame, self.buffer = self.buffer.split(b"\n\n", 1)
            for line in frame.split(b"\n"):
                if line.startswith(b"data:"):
                    chunk = self._parse(line[5:].strip())
                    if chunk is not None:
                        chunks.append(chunk)
        return chunks

    def _parse(self, data: bytes) -> dict[str, Any] | None:
        if data == b"[DONE]":
            self.done = True
            return None
        try:
            chunk = json.loads(data)
        except ValueError:
            self.problem = self.problem or f"an event is not JSON: {data[:80]!r}"
            return None
        if not isinstance(chunk, dict) or chunk.get("object") != "chat.completion.chunk":
            self.problem = self.problem or f"an event is not a chat.completion.chunk: {data[:80]!r}"
            return None
        if chunk.get("usage"):
            self.completion_tokens = chunk["usage"].get("completion_tokens")
        return chunk


def _failed(request: SmokeRequest, mode: str, latency: float, error: ClientError) -> SmokeResult:
    code = error_code(error)
    if code in CALLER_PROBLEMS:  # nothing about the endpoint's health: the CLI explains it
        raise error
    problem = one_line(f"{code}: {error_message(error)}", limit=120)
    return SmokeResult(request.adapter, mode, request.variant or "?", latency, None, None, problem)
