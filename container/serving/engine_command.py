"""The `vllm serve` command line and environment, generated from the settings.

Every flag was checked against vLLM 0.33.0's parser (vllm/engine/arg_utils.py and
vllm/entrypoints/common/cli_args.py in the 0.33.0 wheel). Flags the seeds used that no longer exist
(`--disable-log-requests`, `--no-custom-all-reduce`, `--use-v2-block-manager`, `--swap-space`, ...)
are deliberately absent; tests/container/test_serving_engine_command.py keeps it that way.
"""

from __future__ import annotations

from collections.abc import Mapping

from .settings import BASE_MODEL_NAME, Settings

# vLLM imports this class and installs it with `app.add_middleware(cls)` (register.py, 0.33.0).
MIDDLEWARE_IMPORT_PATH = "serving.middleware.ServingMiddleware"
# vLLM's own engine-level drain on SIGTERM. The supervisor drains HTTP requests (streams included)
# before it signals vLLM, so this only covers stragglers; it stays well inside ENGINE_STOP_GRACE_SECONDS.
ENGINE_SHUTDOWN_TIMEOUT_SECONDS = 2

# SERVING_QUANTIZATION value for an unquantised checkpoint: no --quantization flag, vLLM reads the
# weights' own dtype (the CPU test tier uses it; vLLM's CPU build has no AWQ kernels).
NO_QUANTIZATION = "none"

# Network isolation is on: nothing may try to reach a model hub or phone home at start.
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


def engine_command(settings: Settings) -> list[str]:
    lora_modules = [f"{name}={settings.adapter_dir(name)}" for name in settings.adapters]
    return [
        "vllm",
        "serve",
        settings.model_dir,  # always a local path: without one vLLM falls back to a hub model
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        # One API process: the middleware's in-flight count and counters live in that process.
        "--api-server-count",
        "1",
        "--served-model-name",
        BASE_MODEL_NAME,
        *(() if settings.quantization == NO_QUANTIZATION else ("--quantization", settings.quantization)),
        "--gpu-memory-utilization",
        f"{settings.gpu_memory_utilization:g}",
        "--max-model-len",
        str(settings.max_model_len),
        "--max-num-seqs",
        str(settings.max_num_seqs),
        "--max-num-batched-tokens",
        str(settings.max_num_batched_tokens),
        "--block-size",
        str(settings.block_size),
        "--enable-prefix-caching",
        "--enable-lora",
        "--max-loras",
        str(settings.max_loras),
        "--max-lora-rank",
        str(settings.max_lora_rank),
        # One flag, every adapter: a second --lora-modules would replace the first list.
        "--lora-modules",
        *lora_modules,
        "--middleware",
        MIDDLEWARE_IMPORT_PATH,
        # Token counts and queue/TTFT timings in every response, for the per-request log line.
        "--enable-force-include-usage",
        "--enable-per-request-metrics",
        # The middleware writes one structured line per request; uvicorn's access log would duplicate it.
        "--disable-uvicorn-access-log",
        "--uvicorn-log-level",
        settings.log_level,
        "--shutdown-timeout",
        str(ENGINE_SHUTDOWN_TIMEOUT_SECONDS),
    ]


def engine_environment(settings: Settings, inherited: Mapping[str, str]) -> dict[str, str]:
    return {**inherited, **OFFLINE_ENVIRONMENT, "VLLM_LOGGING_LEVEL": settings.log_level.upper()}
