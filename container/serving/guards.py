"""Request guards: cheap checks that turn a bad request into a clear 4xx before it reaches the engine.

Pure functions of the request's headers and body, so they are tested directly and reused by the
middleware without any framework.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# ADAPTER_HEADER is re-exported: the middleware and the warmup name the header through this module.
from .adapter_routing import ADAPTER_HEADER as ADAPTER_HEADER
from .adapter_routing import AdapterRefused, AdapterRouter
from .errors import clip
from .tokens import chat_tokens_upper_bound, estimate_chat_tokens, estimate_completion_tokens

# SageMaker's InvokeEndpoint body limit (6 MB = 6291456 bytes).
MAX_BODY_BYTES = 6 * 1024 * 1024
CHAT_PATH = "/v1/chat/completions"
COMPLETION_PATH = "/v1/completions"
INVOCATIONS_PATH = "/invocations"


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    message: str
    param: str | None = None


TOO_LARGE = Rejection(413, f"request body is larger than {MAX_BODY_BYTES} bytes (SageMaker's 6 MB limit)")


@dataclass(frozen=True, slots=True)
class Admitted:
    adapter: str
    stream: bool
    # The prompt estimate, or a cheaper upper bound of it when that already fits the budget.
    estimated_prompt_tokens: int
    add_adapter_header: bool = False  # see adapter_routing: vLLM then serves `adapter` on /invocations


class RequestGuard:
    def __init__(self, adapters: tuple[str, ...], max_model_len: int, generation_reserve_tokens: int) -> None:
        self.adapters = AdapterRouter(adapters)
        self.max_model_len = max_model_len
        self.reserve = generation_reserve_tokens
        self.budget = max_model_len - generation_reserve_tokens

    def check_headers(self, content_type: str | None, content_length: str | None) -> Rejection | None:
        if content_length is not None and content_length.isdigit() and int(content_length) > MAX_BODY_BYTES:
            return TOO_LARGE
        media_type = (content_type or "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            return Rejection(400, f"Content-Type must be application/json, got {clip(content_type or 'none')!r}")
        return None

    def check_body(self, path: str, body: bytes, adapter_headers: tuple[str, ...]) -> Rejection | Admitted:
        try:
            text = body.decode()  # JSON on the wire is UTF-8 (RFC 8259 section 8.1)
            payload = json.loads(text)
        except RecursionError:
            return Rejection(400, "request body is nested too deeply to be parsed")
        except ValueError as exc:  # also UnicodeDecodeError, and integers over Python's 4,300-digit limit
            return Rejection(400, f"request body is not valid JSON: {clip(str(exc))}")
        if not isinstance(payload, dict):
            return Rejection(400, "request body must be a JSON object")

        shape = self._prompt_shape(path, payload, body, text)
        if isinstance(shape, Rejection):
            return shape
        field, estimate = shape

        try:
            choice = self.adapters.choose(payload.get("model"), adapter_headers, invocations=path == INVOCATIONS_PATH)
        except AdapterRefused as refused:
            return Rejection(400, str(refused), "model")

        if estimate > self.budget:
            return Rejection(
                400,
                f"prompt is about {estimate} tokens, over the context budget of {self.budget} tokens "
                f"(max_model_len {self.max_model_len} minus {self.reserve} tokens reserved for the answer); "
                "shorten or summarise the conversation history",
                field,
            )
        return Admitted(choice.adapter, payload.get("stream") is True, estimate, choice.add_adapter_header)

    def _prompt_shape(self, path: str, payload: dict[str, Any], body: bytes, text: str) -> Rejection | tuple[str, int]:
        messages, prompt = payload.get("messages"), payload.get("prompt")
        wants_chat = path == CHAT_PATH or (path == INVOCATIONS_PATH and "messages" in payload)
        if wants_chat:
            if not isinstance(messages, list) or not messages:
                return Rejection(400, "'messages' must be a non-empty list of chat messages", "messages")
            bound = chat_tokens_upper_bound(body, text, len(messages))
            return "messages", bound if bound <= self.budget else estimate_chat_tokens(messages)
        if path == COMPLETION_PATH or "prompt" in payload:
            if prompt in (None, "", []):
                return Rejection(400, "'prompt' must be a non-empty string or list", "prompt")
            return "prompt", estimate_completion_tokens(prompt)
        return Rejection(400, "request needs 'messages' (chat) or 'prompt' (completion)", "messages")
