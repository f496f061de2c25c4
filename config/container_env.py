"""The environment variables a variant's SageMaker model passes to the serving container."""

from __future__ import annotations

from config.schema import EnvironmentConfig, Variant
from container.serving import contract as c

MODEL_DIR = "/opt/ml/model/base"
LORA_DIR = "/opt/ml/model/lora"


def container_environment(cfg: EnvironmentConfig, variant: Variant) -> dict[str, str]:
    engine, container = cfg.engine, cfg.container
    return {
        c.ENV_MODEL_DIR: MODEL_DIR,
        c.ENV_LORA_DIR: LORA_DIR,
        c.ENV_LORA_ADAPTERS: ",".join(engine.adapters),
        c.ENV_QUANTIZATION: engine.quantization,
        c.ENV_GPU_MEMORY_UTILIZATION: str(engine.gpu_memory_utilization),
        c.ENV_MAX_MODEL_LEN: str(engine.max_model_len),
        c.ENV_MAX_NUM_SEQS: str(engine.max_num_seqs),
        c.ENV_MAX_NUM_BATCHED_TOKENS: str(engine.max_num_batched_tokens),
        c.ENV_BLOCK_SIZE: str(engine.block_size),
        c.ENV_MAX_LORAS: str(engine.max_loras),
        c.ENV_MAX_LORA_RANK: str(engine.max_lora_rank),
        c.ENV_GENERATION_RESERVE_TOKENS: str(engine.generation_reserve_tokens),
        c.ENV_WARMUP_REQUESTS: str(container.warmup_requests),
        c.ENV_WARMUP_TIMEOUT_SECONDS: str(container.warmup_timeout_seconds),
        c.ENV_DRAIN_SECONDS: str(container.drain_seconds),
        c.ENV_METRICS_INTERVAL_SECONDS: str(container.metrics_interval_seconds),
        c.ENV_ENGINE_STALL_SECONDS: str(container.engine_stall_seconds),
        c.ENV_UNHEALTHY_EXIT_SECONDS: str(container.unhealthy_exit_seconds),
        c.ENV_ADMISSION_DEADLINE_MS: str(cfg.admission_deadline_ms),
        c.ENV_LOG_LEVEL: container.log_level,
        c.ENV_ENDPOINT_NAME: cfg.endpoint_name,
        c.ENV_VARIANT_NAME: variant.name,
        c.ENV_MODEL_VERSION: variant.image_tag,
    }
