"""Latency as a client of the container feels it, one value per request, published as EMF value arrays.

Measured at the container boundary by the middleware (the first thing in vLLM's API server to see a
request), so a request's time in the API server before the engine sees it counts, unlike vLLM's own
`vllm:time_to_first_token_seconds`, which starts when the engine receives the request:

- TimeToFirstToken: request received to the first byte of a streamed answer's body (vLLM sends its
  first event, the role chunk, with the first generated token). Streams only: for a non-streamed
  answer the first byte is the whole answer, which EndToEndLatency already covers.
- TimePerOutputToken: a stream's time after its first byte divided by the output tokens after the
  first (the `usage` vLLM adds with --enable-force-include-usage). Streams of two tokens or more.
- EndToEndLatency: request received to the last byte of the answer, every completed request.
- ShedProjectedWait: for a request the admission check answered 429 (serving/admission.py), the wait
  for an engine slot it projected: how far over capacity the instance was.

Latency counts only answered (2xx) requests that are not warmup: errors are counted by SageMaker's
Invocation4XX/5XXErrors, and a client that left before its first byte never felt a first token.

Each value is published, not an interval percentile: the EMF specification lets a metric member hold
an array of up to 100 numbers ("Values": docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
CloudWatch_Embedded_Metric_Format_Specification.html, MetricDirective "... or an array of numbers",
"up to 100 values"), so a busy second writes several documents. The dimensions are EndpointName and
VariantName only (no instance), so CloudWatch's p50/p95/p99 over a period are the percentiles of every
request the variant answered in it, on every instance.
"""

from __future__ import annotations

from typing import Any

from . import contract as c
from .emf import emf_document

MAX_VALUES_PER_METRIC = 100  # EMF specification: an array of up to 100 values per metric


class LatencyValues:
    """Per-request values waiting to be written, in milliseconds, grouped by contract metric."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {name: [] for name in c.LATENCY_METRICS}

    def add(
        self,
        *,
        ttft_ms: float | None = None,
        tpot_ms: float | None = None,
        e2e_ms: float | None = None,
        shed_wait_ms: float | None = None,
    ) -> None:
        for name, value in (
            (c.METRIC_TIME_TO_FIRST_TOKEN, ttft_ms),
            (c.METRIC_TIME_PER_OUTPUT_TOKEN, tpot_ms),
            (c.METRIC_END_TO_END_LATENCY, e2e_ms),
            (c.METRIC_SHED_PROJECTED_WAIT, shed_wait_ms),
        ):
            if value is not None:
                # Never negative: a single negative value turns percentiles off for the metric.
                self.values[name].append(round(max(0.0, value), 3))

    def __bool__(self) -> bool:
        return any(self.values.values())

    def documents(self, dimensions: dict[str, str], timestamp_ms: int, properties: dict[str, Any]) -> list[dict]:
        """Every value, at most MAX_VALUES_PER_METRIC per metric in a document; empties the buffer."""
        documents = []
        longest = max(len(values) for values in self.values.values())
        for start in range(0, longest, MAX_VALUES_PER_METRIC):
            metrics = {
                name: (values[start : start + MAX_VALUES_PER_METRIC], c.LATENCY_METRICS[name])
                for name, values in self.values.items()
                if values[start : start + MAX_VALUES_PER_METRIC]
            }
            documents.append(emf_document(c.METRIC_NAMESPACE, dimensions, metrics, timestamp_ms, properties))
        self.values = {name: [] for name in c.LATENCY_METRICS}
        return documents


def request_latency(
    *, stream: bool, started: float, first_byte_at: float, finished_at: float, output_tokens: Any, completed: bool
) -> tuple[float | None, float | None, float | None]:
    """(ttft_ms, tpot_ms, e2e_ms) of one answered request, each None where it does not apply.
    Times are time.perf_counter() readings; first_byte_at is 0 when no body byte was sent."""
    ttft_ms = (first_byte_at - started) * 1000 if stream and first_byte_at else None
    e2e_ms = (finished_at - started) * 1000 if completed else None
    tpot_ms = None
    if stream and completed and first_byte_at and isinstance(output_tokens, int) and output_tokens >= 2:
        tpot_ms = (finished_at - first_byte_at) * 1000 / (output_tokens - 1)
    return ttft_ms, tpot_ms, e2e_ms
