"""The physical ceiling of one instance: requests per minute at 100 % of its GPUs' peak, the most any
measurement or assumption of `planning.capacity` can be (issue 31, "Capacity within physics").

Two bounds, the lower one is the ceiling:

- compute: a request costs 2 FLOPs per parameter per token it runs through the model (one multiply
  and one add per weight; Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1,
  C_forward ≈ 2N), for its uncached prompt tokens and its generated tokens. The system prompt is
  served from vLLM's prefix cache, so it costs no FLOPs. AWQ kernels dequantise INT4 weights to FP16
  before the matrix multiply: the FLOPs are the FP16 ones, against the GPU's dense FP16 tensor rate.
  Attention FLOPs (2 to 4 × layers × d_model × context a token by how one counts: 1-3 % here) and the LoRA adapters'
  are left out: the bound is a little generous, which is the safe side for a ceiling.
- memory: every decode step reads all weights once and each running sequence's KV cache. At batch
  B = engine.max_num_seqs (the most vLLM runs at once) a step reads weights + B × context × KV bytes
  per token, and yields B tokens; the average context while decoding is system + uncached prompt +
  half the answer. Prefill (compute-heavy) is not charged here: again generous.

The workload is `capacity/workload.yaml`, read as data (this module does not import the capacity
package): the same requests `ops capacity` sends by default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ruamel.yaml import YAML

if TYPE_CHECKING:
    from config.schema import Catalog, EnvironmentConfig

WORKLOAD_FILE = Path(__file__).resolve().parents[1] / "capacity" / "workload.yaml"
GIB = 1024**3

# The share of the ceiling an instance is ASSUMED to serve within the latency objective until
# `ops capacity` measures it (config.schema.ASSUMED_CAPACITY). An assumption, stated as one on every
# plan. Why half is defensible: model FLOPs utilisation is below peak even where it is easiest to
# reach. PaLM's training, large compute-bound batches on tuned kernels, reached 46.2 % (Chowdhery
# et al. 2022, "PaLM", Table 3); Pope et al. 2022 ("Efficiently Scaling Transformer Inference")
# report 76 % for large-batch prefill, but generation, one model step per token, is bound by
# memory bandwidth at serving batch sizes and runs far below the tensor peak. Serving also holds
# the batch below its best throughput to keep TTFT within the objective. Half of the lower bound is
# a round figure at or below those; a measurement replaces it.
ASSUMED_UTILISATION = 0.5
# Little's law for the assumed concurrency: the seeds' 88 running sequences at 1,200/min are 4.4 s
# in the system per request (88 / 1,200 × 60). Kept when the rate changes: the same answer length
# decodes at about the same speed per sequence.
ASSUMED_SECONDS_PER_REQUEST = 4.4


@dataclass(frozen=True)
class WorkloadTokens:
    """Mean tokens of one request: what the ceiling is computed for."""

    system: float  # prefix-cached: no FLOPs, but read from the KV cache at every decode step
    uncached: float  # the user turn: prefilled every time
    generated: float  # the answer: decoded token by token
    source: str

    @property
    def decode_context(self) -> float:
        """The average context a decoding sequence attends to: prompt and half the answer."""
        return self.system + self.uncached + self.generated / 2


def clipped_lognormal_mean(median: float, sigma: float, low: float, high: float) -> float:
    """E[min(max(X, low), high)] for X log-normal with this median and sigma, in closed form.

    For c > 0, E[X; X < c] = e^(μ + σ²/2) Φ((ln c − μ − σ²)/σ). The workload rounds each draw to a
    whole token before clipping; that changes the mean by less than 10⁻⁸ tokens here.
    """
    if sigma == 0:
        return min(max(median, low), high)
    mu, mean = math.log(median), median * math.exp(sigma**2 / 2)

    def phi(z: float) -> float:
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))

    z_low, z_high = (math.log(low) - mu) / sigma, (math.log(high) - mu) / sigma
    inside = mean * (phi(z_high - sigma) - phi(z_low - sigma))
    return inside + low * phi(z_low) + high * (1 - phi(z_high))


def workload_tokens(raw: dict[str, Any], source: str) -> WorkloadTokens:
    """Tokens per request from a mapping in capacity/workload.yaml's shape."""
    user, answer = raw["user_turn_tokens"], raw["answer_tokens"]
    return WorkloadTokens(
        system=float(raw["system_prompt_tokens"]),
        uncached=(float(user["min"]) + float(user["max"])) / 2,  # drawn uniformly between min and max
        generated=clipped_lognormal_mean(
            float(answer["median"]), float(answer["sigma"]), float(answer["min"]), float(answer["max"])
        ),
        source=source,
    )


@cache
def default_workload() -> WorkloadTokens:
    """capacity/workload.yaml's requests: ~275 uncached prompt tokens and ~203 generated."""
    return workload_tokens(YAML(typ="safe", pure=True).load(WORKLOAD_FILE.read_text()), "capacity/workload.yaml")


@dataclass(frozen=True)
class Ceiling:
    """What one instance of `instance_type` serves at most, in requests per minute, and why."""

    instance_type: str
    requests_per_minute: float  # the lower of the two bounds
    bound: Literal["compute", "memory"]
    compute_rpm: float
    memory_rpm: float
    gpu_count: int
    tflops: float  # dense FP16 tensor, all GPUs of the instance
    bandwidth_gb_per_s: float  # all GPUs of the instance
    parameters_billion: float
    weights_gib: float
    kv_bytes_per_token: int
    batch: int  # engine.max_num_seqs
    tokens: WorkloadTokens

    @property
    def decode_tokens_per_second(self) -> float:
        return self.memory_rpm * self.tokens.generated / 60

    def describe(self) -> str:
        """One line: the ceiling, which bound sets it and the arithmetic, then the other bound."""
        t = self.tokens
        flop = 2 * self.parameters_billion * 1e9 * (t.uncached + t.generated)
        gpus = f"{self.gpu_count} × {self.tflops / self.gpu_count:,.0f} = " if self.gpu_count > 1 else ""
        compute = (
            f"{gpus}{self.tflops:,.0f} TFLOPS dense FP16 ÷ {flop / 1e12:.2f} TFLOP a request (2 × "
            f"{self.parameters_billion:.1f} B params × {t.uncached + t.generated:,.0f} tokens: "
            f"{t.uncached:,.0f} uncached prompt + {t.generated:,.0f} generated)"
        )
        memory = (
            f"decode at batch {self.batch} reads {self.weights_gib:g} GiB of weights + {self.batch} × "
            f"{t.decode_context:,.0f} tokens × {self.kv_bytes_per_token // 1024} KiB of KV cache a step at "
            f"{self.bandwidth_gb_per_s:,.0f} GB/s = {self.decode_tokens_per_second:,.0f} tokens/s ÷ "
            f"{t.generated:,.0f} tokens a request"
        )
        if self.bound == "compute":
            return f"{self.compute_rpm:,.0f}/min compute-bound: {compute}; memory bound {self.memory_rpm:,.0f}/min"
        return f"{self.memory_rpm:,.0f}/min memory-bound: {memory}; compute bound {self.compute_rpm:,.0f}/min"


def ceiling(
    catalog: Catalog, instance_type: str, model: str, max_num_seqs: int, tokens: WorkloadTokens | None = None
) -> Ceiling:
    """The ceiling of `instance_type` serving `model` at batch `max_num_seqs`. KeyError for a type,
    GPU or model the catalog does not know (`known_hardware` tells first)."""
    tokens = tokens or default_workload()
    instance, profile = catalog.instance_types[instance_type], catalog.models[model]
    gpu = catalog.gpus[instance.gpu]
    tflops = gpu.fp16_dense_tflops * instance.gpu_count  # tensor parallel across the instance's GPUs
    bandwidth = gpu.memory_bandwidth_gb_per_s * instance.gpu_count
    flop_per_request = 2 * profile.parameters_billion * 1e9 * (tokens.uncached + tokens.generated)
    compute_rpm = 60 * tflops * 1e12 / flop_per_request
    bytes_per_step = profile.weights_gib * GIB + max_num_seqs * tokens.decode_context * profile.kv_bytes_per_token
    tokens_per_second = max_num_seqs * bandwidth * 1e9 / bytes_per_step
    memory_rpm = 60 * tokens_per_second / tokens.generated
    return Ceiling(
        instance_type=instance_type,
        requests_per_minute=min(compute_rpm, memory_rpm),
        bound="compute" if compute_rpm <= memory_rpm else "memory",
        compute_rpm=compute_rpm,
        memory_rpm=memory_rpm,
        gpu_count=instance.gpu_count,
        tflops=tflops,
        bandwidth_gb_per_s=bandwidth,
        parameters_billion=profile.parameters_billion,
        weights_gib=profile.weights_gib,
        kv_bytes_per_token=profile.kv_bytes_per_token,
        batch=max_num_seqs,
        tokens=tokens,
    )


def known_hardware(catalog: Catalog, instance_type: str, model: str) -> bool:
    """Whether the catalog has what `ceiling` reads: the type, its GPU and the model."""
    instance = catalog.instance_types.get(instance_type)
    return instance is not None and instance.gpu in catalog.gpus and model in catalog.models


def instance_ceiling(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> Ceiling:
    """The ceiling of one `instance_type` running `cfg`'s engine on capacity/workload.yaml's requests."""
    return ceiling(catalog, instance_type, cfg.engine.model, cfg.engine.max_num_seqs)


def ceiling_if_known(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> Ceiling | None:
    """`instance_ceiling`, or None where the catalog lacks the type, its GPU or the model."""
    if not known_hardware(catalog, instance_type, cfg.engine.model):
        return None
    return instance_ceiling(cfg, catalog, instance_type)


def assumed_capacity(ceiling_rpm: float) -> tuple[int, int]:
    """(requests/min, concurrent sequences) assumed at ASSUMED_UTILISATION of a ceiling, rounded down
    to whole requests; sequences by Little's law at ASSUMED_SECONDS_PER_REQUEST."""
    rate = math.floor(ASSUMED_UTILISATION * ceiling_rpm)
    return rate, max(1, round(rate * ASSUMED_SECONDS_PER_REQUEST / 60))
