"""The physical ceiling of one instance: requests per minute at 100 % of its GPUs' usable peaks, at the
batch the latency objective allows, the most any measurement or assumption of `planning.capacity`
can be (issues 31 and 42; docs/explanation/capacity-model.md "Capacity within physics").

A request costs the GPU its prefill plus its share of the decode steps, and on one GPU the two take
turns: their times add.

- prefill (compute): 2 FLOPs per parameter per uncached prompt token (one multiply and one add per
  weight; Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1, C_forward ≈ 2N), plus
  attention, 4 × layers × hidden size per position a prefilled token attends to, at the GPU's FP16
  matrix rate. Tokens the prefix cache holds (the system prompt, a conversation's earlier turns on the
  instance that served them) cost no prefill.
- decode (memory): a step of a batch of B running sequences reads every weight once and each
  sequence's KV cache (context × KV bytes a token), at the usable bandwidth (ECC included), and yields
  B tokens; a request's share is its generated tokens × step time / B. A step is never faster than its
  FLOPs either (the roofline: the longer of the two).

The batch is the type's `planning.capacity.<type>.concurrent_sequences`: the sequences an instance
runs while the latency objective holds, not engine.max_num_seqs (what vLLM would run at most, with
queueing the objective does not allow). The workload is config/domain/workload.yaml (config.domain.workload), the
requests `bin/loadtest` sends: conversations by default, single turns beside them.

Left out, so the ceiling errs high (the safe side for a ceiling): the LoRA adapters' FLOPs, CPU,
scheduling and network overheads, prefix-cache misses, the last partial KV block of a cached prefix.
How far real engines stay below it is measured, not assumed: config.domain.calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from config.domain.workload import TurnTokens, default_tokens, engine_budget, routed_tokens

if TYPE_CHECKING:
    from config.schema import Catalog, EnvironmentConfig, Gpu, ModelProfile

GIB = 1024**3


@dataclass(frozen=True)
class Hardware:
    """What the arithmetic reads of an instance (or of a published run's GPUs) and its model."""

    gpu_count: int
    tflops: float  # all GPUs
    bandwidth_gb_per_s: float  # usable, all GPUs
    parameters_billion: float
    num_layers: int
    hidden_size: int
    weights_gib: float
    kv_bytes_per_token: int

    @classmethod
    def of(cls, gpu: Gpu, gpu_count: int, model: ModelProfile) -> Hardware:
        """Tensor parallel across `gpu_count` GPUs: their rates add, the weights are read once in all."""
        return cls(
            gpu_count=gpu_count,
            tflops=gpu.fp16_dense_tflops * gpu_count,
            bandwidth_gb_per_s=gpu.usable_bandwidth_gb_per_s * gpu_count,
            parameters_billion=model.parameters_billion,
            num_layers=model.num_layers,
            hidden_size=model.hidden_size,
            weights_gib=model.weights_gib,
            kv_bytes_per_token=model.kv_bytes_per_token,
        )


@dataclass(frozen=True)
class Roofline:
    """One workload's ceiling on one piece of hardware at one batch, with the parts that make it."""

    tokens: TurnTokens
    batch: int
    prefill_seconds: float  # per request
    step_seconds: float  # one decode step of the whole batch
    step_bound: str  # "memory" or "compute": which side of the roofline the decode step is on
    step_gb: float  # what a decode step reads

    @property
    def decode_seconds(self) -> float:
        """A request's share of the decode steps: its tokens, each a 1/batch share of a step."""
        return self.tokens.generated * self.step_seconds / self.batch

    @property
    def requests_per_minute(self) -> float:
        return 60 / (self.prefill_seconds + self.decode_seconds)

    @property
    def output_tokens_per_second(self) -> float:
        return self.requests_per_minute * self.tokens.generated / 60


def roofline(hw: Hardware, tokens: TurnTokens, batch: int) -> Roofline:
    """The ceiling of `tokens`' requests on `hw` with `batch` sequences running."""
    flops = hw.tflops * 1e12
    per_token = 2 * hw.parameters_billion * 1e9  # FLOPs a token costs the weights
    per_position = 4 * hw.num_layers * hw.hidden_size  # attention FLOPs per attended position
    prefill = (per_token * tokens.uncached + per_position * tokens.prefill_positions) / flops
    step_bytes = hw.weights_gib * GIB + batch * tokens.decode_context * hw.kv_bytes_per_token
    memory = step_bytes / (hw.bandwidth_gb_per_s * 1e9)
    compute = batch * (per_token + per_position * tokens.decode_context) / flops
    return Roofline(
        tokens=tokens,
        batch=batch,
        prefill_seconds=prefill,
        step_seconds=max(memory, compute),
        step_bound="memory" if memory >= compute else "compute",
        step_gb=step_bytes / 1e9,
    )


@dataclass(frozen=True)
class Ceiling:
    """What one instance of `instance_type` serves at most, in requests per minute, and why: the default
    workload (conversations) and single turns, at the batch the objective allows."""

    instance_type: str
    hardware: Hardware
    default: Roofline  # config/domain/workload.yaml's default: conversations
    single: Roofline  # its single turns

    @property
    def requests_per_minute(self) -> float:
        return self.default.requests_per_minute

    @property
    def batch(self) -> int:
        return self.default.batch

    @property
    def bound(self) -> str:
        """Which part takes more of a request's time, and where the decode step sits on the roofline."""
        r = self.default
        larger = "prefill" if r.prefill_seconds > r.decode_seconds else "decode"
        return f"{larger}-heavy, decode {r.step_bound}-bound"

    def describe(self) -> str:
        """One line: the ceiling and its arithmetic for the default workload, then single turns."""
        return f"{arithmetic(self.hardware, self.default)}; single turns {self.single.requests_per_minute:,.0f}/min"


def arithmetic(hw: Hardware, r: Roofline) -> str:
    """`r`'s ceiling with the arithmetic behind it, in one line."""
    t = r.tokens
    gpus = f"{hw.gpu_count} GPUs, " if hw.gpu_count > 1 else ""
    return (
        f"{r.requests_per_minute:,.0f}/min for {t.name} at batch {r.batch} = 60 s ÷ "
        f"({1000 * r.prefill_seconds:,.0f} ms prefill + {1000 * r.decode_seconds:,.0f} ms decode) a request: "
        f"prefill {t.uncached:,.0f} uncached tokens ({t.cached:,.0f} cached) at {gpus}{hw.tflops:,.1f} TFLOPS; "
        f"decode {t.generated:,.0f} tokens × {1000 * r.step_seconds:.1f} ms a step ÷ {r.batch}, a step reading "
        f"{hw.weights_gib:g} GiB of weights + {r.batch} × {t.decode_context:,.0f} tokens × "
        f"{hw.kv_bytes_per_token // 1024} KiB of KV cache = {r.step_gb:.2f} GB at {hw.bandwidth_gb_per_s:,.0f} GB/s "
        f"usable ({r.step_bound}-bound)"
    )


def hardware(catalog: Catalog, instance_type: str, model: str) -> Hardware:
    instance = catalog.instance_types[instance_type]
    return Hardware.of(catalog.gpus[instance.gpu], instance.gpu_count, catalog.models[model])


def ceiling(
    catalog: Catalog,
    instance_type: str,
    model: str,
    batch: int,
    workloads: tuple[TurnTokens, TurnTokens | None] | None = None,
) -> Ceiling:
    """The ceiling of `instance_type` serving `model` with `batch` sequences running, for (single turns,
    conversations) `workloads` (config/domain/workload.yaml's by default). KeyError for a type, GPU or model the
    catalog does not know (`known_hardware` tells first)."""
    single, conversations = workloads or default_tokens(DEFAULT_ENGINE_BUDGET)
    hw = hardware(catalog, instance_type, model)
    default = roofline(hw, conversations or single, batch)
    return Ceiling(instance_type, hw, default, roofline(hw, single, batch))


# max_model_len 4096 - generation_reserve_tokens 600 in every environment; callers with a config pass
# their own (instance_ceiling).
DEFAULT_ENGINE_BUDGET = 3496


def known_hardware(catalog: Catalog, instance_type: str, model: str | None) -> bool:
    """Whether the catalog has what `ceiling` reads: the type, its GPU and the model."""
    instance = catalog.instance_types.get(instance_type)
    return instance is not None and instance.gpu in catalog.gpus and model in catalog.models


# Routings that keep a conversation's turns on one instance, so its history stays in that instance's prefix
# cache: PREFIX_AWARE, with the gateway sending each conversation's own PrefixAwareId (botocore's
# sagemaker-runtime model: "requests with the same prefix and the same identifier [go] to the same instance"),
# while the instance is below its ConcurrencyThreshold. Under LEAST_OUTSTANDING_REQUESTS or RANDOM a turn
# lands on its previous instance about 1 time in N: only the system prompt, which every request shares, is
# cached (DESIGN.md 3.2d).
KEEPS_CONVERSATION = frozenset({"PREFIX_AWARE"})


def keeps_conversation(cfg: EnvironmentConfig) -> bool:
    return cfg.routing_strategy in KEEPS_CONVERSATION


def routing_cache(cfg: EnvironmentConfig) -> str:
    """Which cached prefix the ceiling counts, and why, in a phrase."""
    if keeps_conversation(cfg):
        return f"each turn's history cached ({cfg.routing_strategy} with a per-conversation PrefixAwareId)"
    return f"only the system prompt cached ({cfg.routing_strategy} keeps no conversation on its instance)"


def instance_ceiling(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, batch: int) -> Ceiling:
    """The ceiling of one `instance_type` running `cfg`'s engine at `batch` on config/domain/workload.yaml's
    requests, prompts within the engine's budget, cached as far as `cfg`'s routing keeps them."""
    tokens = routed_tokens(engine_budget(cfg), keeps_conversation(cfg))
    return ceiling(catalog, instance_type, cfg.engine.model, batch, tokens)


def ceiling_if_known(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> Ceiling | None:
    """`instance_ceiling` at planning.capacity's concurrent_sequences for the type, or None where the
    catalog lacks the type, its GPU or the model, or planning.capacity has no figure for it."""
    capacity = cfg.planning.capacity.get(instance_type)
    if capacity is None or not known_hardware(catalog, instance_type, cfg.engine.model):
        return None
    return instance_ceiling(cfg, catalog, instance_type, capacity.concurrent_sequences)
