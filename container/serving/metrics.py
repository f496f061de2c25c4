"""Interval metrics: scrape the engine's /metrics and the middleware's counters, print EMF lines.

Runs in the supervisor process, so parsing vLLM's exposition never delays a token on the API
server's event loop. Gauges are read as they are; counters and the queue-time histogram become
per-interval values from the difference between two scrapes. Per-request latency is not here: the
middleware publishes it (serving/latency.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from . import contract as c
from .emf import emf_document
from .jsonlog import JsonLogger, write_line
from .loopback import LoopbackClient, LoopbackError
from .prometheus import Exposition, bucket_delta, histogram_quantile
from .settings import Settings

# vLLM 0.33.0 metric names (vllm/v1/metrics/loggers.py); counters are exposed with `_total`.
VLLM_WAITING = "vllm:num_requests_waiting"
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
VLLM_PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
VLLM_PREFIX_HITS = "vllm:prefix_cache_hits_total"
VLLM_PREEMPTIONS = "vllm:num_preemptions_total"
VLLM_QUEUE_TIME = "vllm:request_queue_time_seconds"
SCRAPE_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class Snapshot:
    queue_depth: float | None
    running: float | None
    kv_cache_usage: float | None
    prefix_queries: float
    prefix_hits: float
    preemptions: float
    queue_time_buckets: dict[float, float]
    oom_errors: float
    shed: float
    adapter_requests: dict[str, float]

    @classmethod
    def from_scrapes(cls, exposition_text: str, serving_stats: dict[str, Any]) -> Snapshot:
        engine = Exposition(exposition_text)
        return cls(
            queue_depth=engine.total(VLLM_WAITING),
            running=engine.total(VLLM_RUNNING),
            kv_cache_usage=engine.total(VLLM_KV_CACHE_USAGE),
            prefix_queries=engine.total(VLLM_PREFIX_QUERIES) or 0.0,
            prefix_hits=engine.total(VLLM_PREFIX_HITS) or 0.0,
            preemptions=engine.total(VLLM_PREEMPTIONS) or 0.0,
            queue_time_buckets=engine.buckets(VLLM_QUEUE_TIME),
            oom_errors=float(serving_stats["oom_errors"]),
            shed=float(serving_stats["shed"]),
            adapter_requests={name: float(n) for name, n in serving_stats["adapter_requests"].items()},
        )


def _increase(current: float, previous: float) -> float:
    return current if current < previous else current - previous  # a reset counts from zero


def interval_values(previous: Snapshot, current: Snapshot) -> dict[str, float]:
    """Variant-level values keyed by contract metric name; a value with no data is left out."""
    values: dict[str, float | None] = {
        c.METRIC_QUEUE_DEPTH: current.queue_depth,
        c.METRIC_RUNNING_SEQUENCES: current.running,
        c.METRIC_KV_CACHE_USAGE: None if current.kv_cache_usage is None else current.kv_cache_usage * 100,
        c.METRIC_PREEMPTIONS: _increase(current.preemptions, previous.preemptions),
        c.METRIC_OOM_ERRORS: _increase(current.oom_errors, previous.oom_errors),
        c.METRIC_SHED_REQUESTS: _increase(current.shed, previous.shed),
    }
    queries = _increase(current.prefix_queries, previous.prefix_queries)
    if queries > 0:
        values[c.METRIC_PREFIX_CACHE_HIT_RATE] = 100 * _increase(current.prefix_hits, previous.prefix_hits) / queries
    # A diagnostic only: latency as users feel it is measured per request (serving/latency.py).
    seconds = histogram_quantile(0.95, bucket_delta(current.queue_time_buckets, previous.queue_time_buckets))
    values[c.METRIC_ENGINE_QUEUE_TIME_P95] = None if seconds is None else seconds * 1000
    return {name: value for name, value in values.items() if value is not None}


def interval_documents(settings: Settings, previous: Snapshot, current: Snapshot, timestamp_ms: int) -> list[dict]:
    variant = {c.DIM_ENDPOINT: settings.endpoint_name, c.DIM_VARIANT: settings.variant_name}
    properties = {"ModelVersion": settings.model_version}
    values = interval_values(previous, current)
    documents = [
        emf_document(
            c.METRIC_NAMESPACE,
            variant,
            {name: (value, c.VARIANT_METRICS[name]) for name, value in values.items()},
            timestamp_ms,
            properties,
        )
    ]
    # One document per adapter: a document holds one value per dimension.
    for adapter, count in sorted(current.adapter_requests.items()):
        increase = _increase(count, previous.adapter_requests.get(adapter, 0.0))
        documents.append(
            emf_document(
                c.METRIC_NAMESPACE,
                {**variant, c.DIM_ADAPTER: adapter},
                {c.METRIC_ADAPTER_REQUESTS: (increase, c.ADAPTER_METRICS[c.METRIC_ADAPTER_REQUESTS])},
                timestamp_ms,
                properties,
            )
        )
    return documents


class MetricsEmitter:
    def __init__(self, settings: Settings, client: LoopbackClient, stats_path: str, log: JsonLogger) -> None:
        self.settings = settings
        self.client = client
        self.stats_path = stats_path
        self.log = log

    async def scrape(self) -> Snapshot:
        exposition, stats = await asyncio.gather(
            self.client.get("/metrics", timeout=SCRAPE_TIMEOUT_SECONDS),
            self.client.get(self.stats_path, timeout=SCRAPE_TIMEOUT_SECONDS),
        )
        if exposition.status != 200 or stats.status != 200:
            raise LoopbackError(f"scrape answered {exposition.status} (/metrics), {stats.status} (stats)")
        return Snapshot.from_scrapes(exposition.text, stats.json())

    async def run(self) -> None:
        previous: Snapshot | None = None
        while True:
            try:
                current = await self.scrape()
            except (LoopbackError, ValueError, KeyError) as exc:
                self.log.warning("metrics_scrape_failed", error=f"{type(exc).__name__}: {exc}")
            else:
                if previous is not None:
                    for document in interval_documents(self.settings, previous, current, int(time.time() * 1000)):
                        write_line(document)
                previous = current
            await asyncio.sleep(self.settings.metrics_interval_seconds)
