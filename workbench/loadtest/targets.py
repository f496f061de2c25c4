"""Where `bin/loadtest` sends its requests, and how one streamed request is timed.

Both targets stream: `UrlTarget` posts to a serving container's `/invocations` (what SageMaker calls);
`VariantTarget` calls InvokeEndpointWithResponseStream with TargetVariant (botocore's sagemaker-runtime
model: the `PayloadPart` events carry the container's chunks). The first token is the first SSE `data:`
event (vLLM sends its first event with the first generated token); output tokens come from the
`usage` of the last event (vLLM's --enable-force-include-usage), and so do the prompt's; an
`{"error": ...}` event, a non-200 answer or a stream error is an error. A conversation's turn keeps
its answer's text (`RequestRecord.keep_answer`): the next turn sends it back.

vLLM's prefix-cache counters, where the target exposes them (`UrlTarget.prefix_cache_counters`: the
container's /metrics, vLLM's Prometheus text passed through untouched), give a step's hit rate:
`vllm:prefix_cache_queries` and `vllm:prefix_cache_hits`, tokens queried and tokens found cached
(vllm/v1/metrics/loggers.py of the pinned engine; the exposition adds `_total` to a counter). Through
the SageMaker runtime there is no /metrics: the container's PrefixCacheHitRatePercent metric in
CloudWatch covers the same minutes (docs/how-to/measure-capacity.md).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from config.routing import PREFIX_AWARE_ID_PARAMETER
from container.serving.metrics import VLLM_PREFIX_HITS, VLLM_PREFIX_QUERIES
from container.serving.prometheus import Exposition

REQUEST_TIMEOUT_SECONDS = 70.0  # SageMaker's 60 s invocation timeout, and some
METRICS_TIMEOUT_SECONDS = 5.0
SHED_STATUS = 429  # the serving image's admission check (container/serving/admission.py)
TAIL_BYTES = 8192  # enough for the last events, where usage is


@dataclass
class RequestRecord:
    """One request's times (time.perf_counter) and outcome."""

    scheduled: float
    sent: float = 0.0
    first: float | None = None
    done: float | None = None
    status: int | None = None
    error: str | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None  # as the engine counted them (usage)
    # Conversations (capacity.conversation_step.run_conversation_step): which turn of its session this
    # is, whether the step counts it (False for the warm-up's turns), whether older exchanges were
    # dropped to fit the prompt budget, and the answer's text, kept when `keep_answer` is set.
    turn: int | None = None
    resumed: bool = False  # the first turn a session under way at the step's start sends (capacity.under_way)
    counted: bool = True
    trimmed: bool = False
    keep_answer: bool = False
    answer: str | None = None
    # The conversation's PrefixAwareId, the same on each of its turns (config.routing: the client contract);
    # None for single turns, each its own conversation.
    conversation: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == 200 and self.first is not None and self.done is not None

    @property
    def shed(self) -> bool:
        """Turned away by the serving image's admission check (429): over capacity, never a fast answer."""
        return self.status == SHED_STATUS

    def finish(self, tail: bytes, whole: bytes | None) -> None:
        """Usage and errors from the stream's tail; the answer's text from the whole stream if kept."""
        read_last_event(self, tail)
        if whole is not None:
            self.answer = answer_text(whole)


def read_last_event(record: RequestRecord, tail: bytes) -> None:
    """Usage and errors from the stream's last events (everything before `data: [DONE]`)."""
    events = [e.strip() for e in tail.split(b"\n\n") if e.strip().startswith(b"data: {")]
    if not events:
        return
    last = events[-1][len(b"data: ") :]
    if last.startswith(b'{"error"'):
        record.error = "error event in the stream"
        return
    try:
        usage = json.loads(last).get("usage") or {}
    except ValueError:
        return
    if isinstance(usage.get("completion_tokens"), int):
        record.output_tokens = usage["completion_tokens"]
    if isinstance(usage.get("prompt_tokens"), int):
        record.prompt_tokens = usage["prompt_tokens"]


def answer_text(stream: bytes) -> str:
    """What a stream answered: every chunk's `choices[].delta.content` (chat) or `text` (completion)."""
    parts = []
    for event in stream.split(b"\n\n"):
        event = event.strip()
        if not event.startswith(b"data: {"):
            continue
        try:
            chunk = json.loads(event[len(b"data: ") :])
        except ValueError:
            continue
        for choice in chunk.get("choices") or []:
            text = (choice.get("delta") or {}).get("content") if "delta" in choice else choice.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def prefix_cache_counters(exposition_text: str) -> tuple[float, float] | None:
    """(tokens queried, tokens found cached) summed over engines and models; None without the counters."""
    exposition = Exposition(exposition_text)
    queries, hits = exposition.total(VLLM_PREFIX_QUERIES), exposition.total(VLLM_PREFIX_HITS)
    return None if queries is None or hits is None else (queries, hits)


@dataclass
class UrlTarget:
    url: str
    instances: int = 1
    client: httpx.AsyncClient | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.url

    @property
    def directory_name(self) -> str:
        """The report directory's name, before its time: url-127.0.0.1-8080 for http://127.0.0.1:8080."""
        return "url-" + self.url.split("//")[-1].replace(":", "-").replace("/", "-")

    def describe(self) -> dict[str, Any]:
        return {"kind": "url", "url": self.url}

    async def open(self) -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
        self.client = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_SECONDS, limits=limits)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()

    async def prefix_cache_counters(self) -> tuple[float, float] | None:
        """vLLM's prefix-cache counters from the container's /metrics; None when it has none."""
        assert self.client is not None
        try:
            answer = await self.client.get(f"{self.url}/metrics", timeout=METRICS_TIMEOUT_SECONDS)
        except httpx.HTTPError:
            return None
        return prefix_cache_counters(answer.text) if answer.status_code == 200 else None

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        assert self.client is not None
        record.sent = time.perf_counter()
        try:
            headers = {"content-type": "application/json"}
            async with self.client.stream("POST", f"{self.url}/invocations", content=body, headers=headers) as answer:
                record.status = answer.status_code
                if answer.status_code != 200:
                    await answer.aread()
                    record.error = f"HTTP {answer.status_code}"
                    return
                tail, whole = b"", bytearray() if record.keep_answer else None
                async for chunk in answer.aiter_bytes():
                    if record.first is None and b"data: " in chunk:
                        record.first = time.perf_counter()
                    tail = (tail + chunk)[-TAIL_BYTES:]
                    if whole is not None:
                        whole += chunk
                record.finish(tail, None if whole is None else bytes(whole))
        except httpx.HTTPError as error:
            record.error = f"{type(error).__name__}"
        finally:
            record.done = time.perf_counter()


@dataclass
class VariantTarget:
    """One production variant through the SageMaker runtime; boto3 calls run in threads."""

    runtime: Any  # a sagemaker-runtime client
    environment: str
    endpoint: str
    variant: str
    instances: int
    details: dict[str, Any]  # what the report says of the variant: image, instance type, engine
    executor: ThreadPoolExecutor | None = field(default=None, repr=False)
    # A cloudwatch client: the steps' ConcurrentRequestsPerModel are read after the sweep (signal_reading);
    # None: not read, and the record says so by leaving the figures out.
    cloudwatch: Any = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"{self.environment}/{self.variant}"

    def read_scaling_signal(self, steps: list) -> None:
        """Each step's platform reading of the scaling signal beside its own in flight (signal_reading)."""
        if self.cloudwatch is not None:
            from workbench.loadtest.signal_reading import read_platform_concurrency

            read_platform_concurrency(self.cloudwatch, self.endpoint, self.variant, steps)

    @property
    def directory_name(self) -> str:
        return f"{self.environment}-{self.variant}"

    def describe(self) -> dict[str, Any]:
        where = {"endpoint": self.endpoint, "variant": self.variant, "environment": self.environment}
        return {"kind": "sagemaker", **where, **self.details}

    async def open(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=256, thread_name_prefix="capacity")

    async def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        await asyncio.get_running_loop().run_in_executor(self.executor, self._invoke, body, record, stop)

    def params(self, body: bytes, record: RequestRecord) -> dict[str, Any]:
        """InvokeEndpointWithResponseStream's parameters; a conversation's turn carries its PrefixAwareId."""
        params = {
            "EndpointName": self.endpoint,
            "Body": body,
            "ContentType": "application/json",
            "TargetVariant": self.variant,
        }
        return params | ({PREFIX_AWARE_ID_PARAMETER: record.conversation} if record.conversation else {})

    def _invoke(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        record.sent = time.perf_counter()
        try:
            answer = self.runtime.invoke_endpoint_with_response_stream(**self.params(body, record))
            record.status = answer["ResponseMetadata"]["HTTPStatusCode"]
            stream, tail, whole = answer["Body"], b"", bytearray() if record.keep_answer else None
            for event in stream:
                if stop.is_set():
                    stream.close()
                    record.error = "stopped"
                    return
                part = event.get("PayloadPart")
                if part is None:
                    record.error = next(iter(event), "unknown event")
                    continue
                if record.first is None and b"data: " in part["Bytes"]:
                    record.first = time.perf_counter()
                tail = (tail + part["Bytes"])[-TAIL_BYTES:]
                if whole is not None:
                    whole += part["Bytes"]
            record.finish(tail, None if whole is None else bytes(whole))
        except ClientError as error:
            # A container's 4xx/5xx is ModelError (HTTP 424) carrying the container's own status as
            # OriginalStatusCode (botocore's sagemaker-runtime model): the status recorded is the container's.
            record.status = error.response.get("OriginalStatusCode") or error.response.get("ResponseMetadata", {}).get(
                "HTTPStatusCode"
            )
            record.error = error.response.get("Error", {}).get("Code", "ClientError")
        except BotoCoreError as error:
            record.error = type(error).__name__
        finally:
            record.done = time.perf_counter()
