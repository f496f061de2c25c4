"""The container's settings, read once from the environment and validated as a whole.

The SERVING_* names the SageMaker model passes are defined in `contract`. The few names defined here
are internal: the image's defaults are right on SageMaker and only local runs and tests change them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from . import contract as c
from .contract import (
    BASE_MODEL_NAME,
    DEFAULT_UNHEALTHY_EXIT_SECONDS,
    ENGINE_STOP_GRACE_SECONDS,
    GPU_CHECK_INTERVAL_SECONDS,
    SAGEMAKER_SIGKILL_SECONDS,
    VLLM_LORA_RANKS,
    adapter_name_problem,
)

# Internal settings (not set by the CDK app).
ENV_HOST = "SERVING_HOST"
ENV_PORT = "SERVING_PORT"
ENV_STATE_FILE = "SERVING_STATE_FILE"
ENV_GPU_CHECK_INTERVAL_SECONDS = "SERVING_GPU_CHECK_INTERVAL_SECONDS"

SAGEMAKER_PORT = 8080
# BASE_MODEL_NAME (from contract): the base model's served name; adapters are served under their own.
__all__ = ["BASE_MODEL_NAME", "Settings", "SettingsError"]
LOG_LEVELS = ("debug", "info", "warning", "error")
# A hung engine core is declared after this long without a token while requests are unfinished.
# Far above any single prefill or decode step, well inside what a stuck client would wait.
DEFAULT_ENGINE_STALL_SECONDS = 30


class SettingsError(ValueError):
    """Every problem found in the environment, one per line, each naming the variable."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid container environment:\n  " + "\n  ".join(problems))


@dataclass(frozen=True)
class Settings:
    model_dir: str
    lora_dir: str
    adapters: tuple[str, ...]
    quantization: str
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    max_loras: int
    max_lora_rank: int
    generation_reserve_tokens: int
    warmup_requests: int
    warmup_timeout_seconds: float
    drain_seconds: float
    metrics_interval_seconds: float
    endpoint_name: str
    variant_name: str
    model_version: str
    log_level: str
    host: str
    port: int
    state_file: str
    gpu_check_interval_seconds: float
    engine_stall_seconds: float
    unhealthy_exit_seconds: float
    admission_deadline_ms: float | None = None  # None: no admission check (serving/admission.py)

    @property
    def prompt_token_budget(self) -> int:
        """Longest prompt accepted: the rest of max_model_len is kept for the answer."""
        return self.max_model_len - self.generation_reserve_tokens

    @property
    def http_drain_seconds(self) -> float:
        return self.drain_seconds - ENGINE_STOP_GRACE_SECONDS

    def adapter_dir(self, adapter: str) -> str:
        return os.path.join(self.lora_dir, adapter)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        reader = _Reader(os.environ if env is None else env)
        settings = cls(
            model_dir=reader.text(c.ENV_MODEL_DIR),
            lora_dir=reader.text(c.ENV_LORA_DIR),
            adapters=reader.adapters(c.ENV_LORA_ADAPTERS),
            quantization=reader.text(c.ENV_QUANTIZATION),
            gpu_memory_utilization=reader.number(
                c.ENV_GPU_MEMORY_UTILIZATION, float, lambda v: 0 < v <= 1, "in (0, 1]"
            ),
            max_model_len=reader.number(c.ENV_MAX_MODEL_LEN, int, lambda v: v >= 1, ">= 1"),
            max_num_seqs=reader.number(c.ENV_MAX_NUM_SEQS, int, lambda v: v >= 1, ">= 1"),
            max_num_batched_tokens=reader.number(c.ENV_MAX_NUM_BATCHED_TOKENS, int, lambda v: v >= 1, ">= 1"),
            block_size=reader.number(c.ENV_BLOCK_SIZE, int, lambda v: v >= 1, ">= 1"),
            max_loras=reader.number(c.ENV_MAX_LORAS, int, lambda v: v >= 1, ">= 1"),
            max_lora_rank=reader.number(
                c.ENV_MAX_LORA_RANK, int, lambda v: v in VLLM_LORA_RANKS, f"one of {list(VLLM_LORA_RANKS)}"
            ),
            generation_reserve_tokens=reader.number(c.ENV_GENERATION_RESERVE_TOKENS, int, lambda v: v >= 1, ">= 1"),
            warmup_requests=reader.number(c.ENV_WARMUP_REQUESTS, int, lambda v: v >= 0, ">= 0"),
            warmup_timeout_seconds=reader.number(c.ENV_WARMUP_TIMEOUT_SECONDS, float, lambda v: v > 0, "> 0"),
            drain_seconds=reader.number(
                c.ENV_DRAIN_SECONDS,
                float,
                lambda v: ENGINE_STOP_GRACE_SECONDS < v < SAGEMAKER_SIGKILL_SECONDS,
                f"more than {ENGINE_STOP_GRACE_SECONDS:g} (kept for stopping the engine) and less than "
                f"SageMaker's {SAGEMAKER_SIGKILL_SECONDS} s SIGKILL",
            ),
            metrics_interval_seconds=reader.number(c.ENV_METRICS_INTERVAL_SECONDS, float, lambda v: v > 0, "> 0"),
            endpoint_name=reader.text(c.ENV_ENDPOINT_NAME),
            variant_name=reader.text(c.ENV_VARIANT_NAME),
            model_version=reader.text(c.ENV_MODEL_VERSION),
            log_level=reader.choice(c.ENV_LOG_LEVEL, LOG_LEVELS, default="info"),
            host=reader.text(ENV_HOST, default="0.0.0.0"),
            port=reader.number(ENV_PORT, int, lambda v: 0 < v < 65536, "a TCP port", default=str(SAGEMAKER_PORT)),
            state_file=reader.text(ENV_STATE_FILE, default="/tmp/serving/state.json"),
            gpu_check_interval_seconds=reader.number(
                ENV_GPU_CHECK_INTERVAL_SECONDS, float, lambda v: v > 0, "> 0", default=str(GPU_CHECK_INTERVAL_SECONDS)
            ),
            engine_stall_seconds=reader.number(
                c.ENV_ENGINE_STALL_SECONDS, float, lambda v: v > 0, "> 0", default=str(DEFAULT_ENGINE_STALL_SECONDS)
            ),
            unhealthy_exit_seconds=reader.number(
                c.ENV_UNHEALTHY_EXIT_SECONDS, float, lambda v: v > 0, "> 0", default=str(DEFAULT_UNHEALTHY_EXIT_SECONDS)
            ),
            admission_deadline_ms=reader.optional_number(
                c.ENV_ADMISSION_DEADLINE_MS, lambda v: v > 0, "> 0 (milliseconds; unset for no admission check)"
            ),
        )
        if not reader.problems and settings.generation_reserve_tokens >= settings.max_model_len:
            reader.problems.append(
                f"{c.ENV_GENERATION_RESERVE_TOKENS} must be less than {c.ENV_MAX_MODEL_LEN} "
                f"({settings.max_model_len}), got {settings.generation_reserve_tokens}"
            )
        if reader.problems:
            raise SettingsError(reader.problems)
        return settings


N = TypeVar("N", int, float)


class _Reader:
    """Reads variables and collects every problem instead of stopping at the first."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def _raw(self, name: str, default: str | None) -> str | None:
        value = self.env.get(name, "").strip() or default
        if value is None:
            self.problems.append(f"{name} is required")
        return value

    def text(self, name: str, default: str | None = None) -> str:
        return self._raw(name, default) or ""

    def choice(self, name: str, allowed: tuple[str, ...], default: str) -> str:
        value = (self._raw(name, default) or default).lower()
        if value not in allowed:
            self.problems.append(f"{name} must be one of {list(allowed)}, got {value!r}")
        return value

    def number(self, name: str, kind: type[N], valid: Callable[[N], bool], rule: str, default: str | None = None) -> N:
        raw = self._raw(name, default)
        if raw is None:
            return kind(0)
        try:
            value = kind(raw)
        except ValueError:
            self.problems.append(f"{name} must be {'an integer' if kind is int else 'a number'} {rule}, got {raw!r}")
            return kind(0)
        if not valid(value):
            self.problems.append(f"{name} must be {rule}, got {raw!r}")
        return value

    def optional_number(self, name: str, valid: Callable[[float], bool], rule: str) -> float | None:
        if not self.env.get(name, "").strip():
            return None
        return self.number(name, float, valid, rule)

    def adapters(self, name: str) -> tuple[str, ...]:
        raw = self._raw(name, None) or ""
        names = tuple(part.strip() for part in raw.split(",") if part.strip())
        if raw and not names:
            self.problems.append(f"{name} must list at least one adapter name, got {raw!r}")
        for adapter in names:
            refusal = adapter_name_problem(adapter)
            if refusal:
                self.problems.append(f"{name}: {refusal}")
        if len(set(names)) != len(names):
            self.problems.append(f"{name} lists an adapter twice: {raw!r}")
        return names
