"""The names the serving image shares with the CDK app and the operations CLI.

This module is the single definition of:
- the environment variables the SageMaker model passes to the container (engine settings), and
- the CloudWatch metric namespace, metric names and dimensions the container emits as EMF,
  which the scaling policies, alarms and dashboard consume.

It has no third-party imports so that both the image and the CDK app can import it.
"""

from __future__ import annotations

import re

# --- Environment variables set on the SageMaker model --------------------------------------------
# Prefix SERVING_ rather than VLLM_: vLLM warns about (and reserves) unknown VLLM_* variables.
ENV_MODEL_DIR = "SERVING_MODEL_DIR"
ENV_LORA_DIR = "SERVING_LORA_DIR"
ENV_LORA_ADAPTERS = "SERVING_LORA_ADAPTERS"  # comma-separated adapter names, one dir each
ENV_QUANTIZATION = "SERVING_QUANTIZATION"
ENV_GPU_MEMORY_UTILIZATION = "SERVING_GPU_MEMORY_UTILIZATION"
ENV_MAX_MODEL_LEN = "SERVING_MAX_MODEL_LEN"
ENV_MAX_NUM_SEQS = "SERVING_MAX_NUM_SEQS"
ENV_MAX_NUM_BATCHED_TOKENS = "SERVING_MAX_NUM_BATCHED_TOKENS"
ENV_BLOCK_SIZE = "SERVING_BLOCK_SIZE"
ENV_MAX_LORAS = "SERVING_MAX_LORAS"
ENV_MAX_LORA_RANK = "SERVING_MAX_LORA_RANK"
ENV_GENERATION_RESERVE_TOKENS = "SERVING_GENERATION_RESERVE_TOKENS"
ENV_WARMUP_REQUESTS = "SERVING_WARMUP_REQUESTS"
ENV_WARMUP_TIMEOUT_SECONDS = "SERVING_WARMUP_TIMEOUT_SECONDS"
ENV_DRAIN_SECONDS = "SERVING_DRAIN_SECONDS"
ENV_METRICS_INTERVAL_SECONDS = "SERVING_METRICS_INTERVAL_SECONDS"
ENV_ENDPOINT_NAME = "SERVING_ENDPOINT_NAME"
ENV_VARIANT_NAME = "SERVING_VARIANT_NAME"
ENV_MODEL_VERSION = "SERVING_MODEL_VERSION"  # the image tag, logged with every request
ENV_LOG_LEVEL = "SERVING_LOG_LEVEL"
# Requests unfinished and no token produced for this long means a hung engine (config
# container.engine_stall_seconds; the image's default of 30 applies only where it is not set).
ENV_ENGINE_STALL_SECONDS = "SERVING_ENGINE_STALL_SECONDS"
# A GPU check failing for this long (it answers /ping 503 meanwhile) makes the container drain and exit
# non-zero, so the instance is replaced instead of answering 503 for ever (config
# container.unhealthy_exit_seconds; the image's default applies only where it is not set).
ENV_UNHEALTHY_EXIT_SECONDS = "SERVING_UNHEALTHY_EXIT_SECONDS"
DEFAULT_UNHEALTHY_EXIT_SECONDS = 120
# Admission (serving/admission.py): a request whose projected time to first token exceeds this many
# milliseconds is answered 429 at once (config container.admission_deadline_ms). Unset: no admission check.
ENV_ADMISSION_DEADLINE_MS = "SERVING_ADMISSION_DEADLINE_MS"
# How often the supervisor runs nvidia-smi while serving (an internal setting; tests shorten it).
GPU_CHECK_INTERVAL_SECONDS = 30

# --- Limits both sides enforce (the CDK config at synth, the container at start) -----------------
# vLLM's accepted `--max-lora-rank` values (vllm/config/lora.py, MaxLoRARanks, vLLM 0.33.0).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
# SageMaker sends SIGKILL 30 s after SIGTERM; of the drain budget, the supervisor keeps this much
# for stopping the engine after the HTTP drain.
SAGEMAKER_SIGKILL_SECONDS = 30
ENGINE_STOP_GRACE_SECONDS = 5

# Adapter names: the config refuses at synth exactly what the container's reader refuses at start.
# The container splits SERVING_LORA_ADAPTERS on commas and serves each adapter from
# <lora dir>/<name> under the model name <name>, passed to vLLM as `--lora-modules name=path`:
# so no comma, '=', '/', whitespace or leading dot, and never the base model's served name.
BASE_MODEL_NAME = "base"
ADAPTER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ADAPTER_NAME_RULE = "1-64 letters, digits, '_', '.', '-', starting with a letter or digit"


def adapter_name_problem(name: object) -> str | None:
    """Why `name` cannot be an adapter name, or None when it can."""
    shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:80] + "..."
    if not isinstance(name, str) or not ADAPTER_NAME_PATTERN.fullmatch(name):
        return f"invalid adapter name {shown} ({ADAPTER_NAME_RULE})"
    if name == BASE_MODEL_NAME:
        return f"adapter name {shown} is the base model's served name"
    return None


# --- CloudWatch metrics emitted by the container (Embedded Metric Format) -----------------------
METRIC_NAMESPACE = "MangaAssist/LLMServing"
DIM_ENDPOINT = "EndpointName"
DIM_VARIANT = "VariantName"
DIM_ADAPTER = "Adapter"
VARIANT_DIMENSIONS = (DIM_ENDPOINT, DIM_VARIANT)
ADAPTER_DIMENSIONS = (DIM_ENDPOINT, DIM_VARIANT, DIM_ADAPTER)

METRIC_QUEUE_DEPTH = "QueueDepth"  # vllm:num_requests_waiting (gauge), Count
METRIC_RUNNING_SEQUENCES = "RunningSequences"  # vllm:num_requests_running (gauge), Count
METRIC_KV_CACHE_USAGE = "KVCacheUsagePercent"  # vllm:kv_cache_usage_perc x 100, Percent
METRIC_PREFIX_CACHE_HIT_RATE = "PrefixCacheHitRatePercent"  # hits/queries over the interval, Percent
# vLLM's queue-time histogram (vllm:request_queue_time_seconds), p95 over the interval, per instance:
# a diagnostic (waiting for a batch slot vs prefill), never an alarm input. Milliseconds.
METRIC_ENGINE_QUEUE_TIME_P95 = "EngineQueueTimeP95"
METRIC_PREEMPTIONS = "Preemptions"  # vllm:num_preemptions delta, Count
METRIC_OOM_ERRORS = "OutOfMemoryErrors"  # caught by the serving layer, Count
METRIC_ADAPTER_REQUESTS = "AdapterRequests"  # per adapter (ADAPTER_DIMENSIONS), Count
# Requests answered 429 by the admission check (serving/admission.py), Count; 0 in an interval without.
METRIC_SHED_REQUESTS = "ShedRequests"

VARIANT_METRICS = {
    METRIC_QUEUE_DEPTH: "Count",
    METRIC_RUNNING_SEQUENCES: "Count",
    METRIC_KV_CACHE_USAGE: "Percent",
    METRIC_PREFIX_CACHE_HIT_RATE: "Percent",
    METRIC_ENGINE_QUEUE_TIME_P95: "Milliseconds",
    METRIC_PREEMPTIONS: "Count",
    METRIC_OOM_ERRORS: "Count",
    METRIC_SHED_REQUESTS: "Count",
}
ADAPTER_METRICS = {METRIC_ADAPTER_REQUESTS: "Count"}

# Per-request latency at the container boundary (serving/latency.py), one value per request, written
# as EMF value arrays with VARIANT_DIMENSIONS only, so that CloudWatch's percentile statistics are over
# every request of the variant. Milliseconds, never negative.
METRIC_TIME_TO_FIRST_TOKEN = "TimeToFirstToken"  # streams: request received to the answer's first byte
METRIC_TIME_PER_OUTPUT_TOKEN = "TimePerOutputToken"  # streams: after the first byte, per further token
METRIC_END_TO_END_LATENCY = "EndToEndLatency"  # every completed request: received to last byte
# Shed requests only: the wait for an engine slot the admission check projected (why it said 429).
METRIC_SHED_PROJECTED_WAIT = "ShedProjectedWait"
LATENCY_METRICS = {
    METRIC_TIME_TO_FIRST_TOKEN: "Milliseconds",
    METRIC_TIME_PER_OUTPUT_TOKEN: "Milliseconds",
    METRIC_END_TO_END_LATENCY: "Milliseconds",
    METRIC_SHED_PROJECTED_WAIT: "Milliseconds",
}
