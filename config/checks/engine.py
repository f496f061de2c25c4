"""The engine settings: LoRA rank and slots, adapter names, the model and its context, and the vLLM
start-up rules our settings can break, checked at synth instead of on the instance.

The start-up rules are read from the vLLM 0.33.0 wheel (the version the image pins); each names its
source file. Rules already enforced elsewhere: `--max-lora-rank` choices (contract.VLLM_LORA_RANKS,
here), gpu_memory_utilization in (0, 1] (schema.py), one max_model_len sequence fitting the KV cache
(config.checks.vram_budget) and max_model_len within the model's positions (here, from the catalog).
Rules our settings cannot reach: max_num_batched_tokens < max_model_len is refused only with chunked
prefill off (we never turn it off); max_cpu_loras >= max_loras (we never set max_cpu_loras).
"""

from __future__ import annotations

from collections import Counter

from config.problems import Problem, did_you_mean, quote, refuse
from config.schema import Catalog, Engine, EnvironmentConfig
from config.sections import skip_invalid
from container.serving.contract import VLLM_LORA_RANKS, adapter_name_problem

MAX_ENVIRONMENT_VALUE_CHARS = 1024  # SageMaker CreateModel Environment values (botocore EnvironmentValue max)

# Every CUDA attention backend vLLM 0.33 picks for a non-MLA model on Ampere/Ada/Turing GPUs
# (g5 A10G, g6 L4, p4d A100, g4dn T4; priority list in vllm/platforms/cuda.py) takes a block size
# that is a multiple of 16: FLASH_ATTN and TRITON_ATTN and FLEX_ATTENTION return [MultipleOf(16)]
# and FLASHINFER [16, 32, 64] from get_supported_kernel_block_sizes
# (vllm/v1/attention/backends/{flash_attn,triton_attn,flex_attention,flashinfer}.py), and
# AttentionBackend.supports_block_size (vllm/v1/attention/backend.py) accepts a cache block size
# that is a multiple of one of them. Any other size leaves no backend: vLLM refuses to start.
KERNEL_BLOCK_SIZE_MULTIPLE = 16


def check_engine(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    engine = cfg.engine
    return [
        *skip_invalid(_check_lora_rank, engine),
        *skip_invalid(_check_adapters, engine),
        *skip_invalid(_check_model, engine, catalog),
        *skip_invalid(_check_generation_reserve, engine),
        *skip_invalid(_check_lora_slots, engine),
    ]


def _check_lora_slots(engine: Engine) -> list[Problem]:
    """vLLM reserves GPU memory for max_loras adapters at start; a batch of max_num_seqs sequences
    uses at most one adapter each, so slots beyond that are memory no request can use."""
    if engine.max_loras > engine.max_num_seqs:
        return [
            ("engine.max_loras", f"must be at most engine.max_num_seqs {engine.max_num_seqs}, got {engine.max_loras}")
        ]
    return []


def _check_lora_rank(engine: Engine) -> list[Problem]:
    if engine.max_lora_rank not in VLLM_LORA_RANKS:
        allowed = ", ".join(map(str, VLLM_LORA_RANKS))
        return [("engine.max_lora_rank", f"must be one of {allowed}, got {engine.max_lora_rank}")]
    return []


def _check_adapters(engine: Engine) -> list[Problem]:
    """The container's own rule (container/serving/contract.py), so synth refuses what it would."""
    problems = []
    for index, name in enumerate(engine.adapters):
        refusal = adapter_name_problem(name)
        if refusal:
            problems.append((f"engine.adapters[{index}]", refusal))
    for name, count in Counter(engine.adapters).items():
        if count > 1:
            problems.append(("engine.adapters", f"adapter names must be unique, {quote(name)} appears {count} times"))
    joined = len(",".join(engine.adapters))
    if joined > MAX_ENVIRONMENT_VALUE_CHARS:
        problems += refuse(
            "engine.adapters",
            f"the names joined by commas take {joined} characters; SageMaker takes at most "
            f"{MAX_ENVIRONMENT_VALUE_CHARS} per container environment value",
        )
    return problems


def _check_model(engine: Engine, catalog: Catalog) -> list[Problem]:
    model = catalog.models.get(engine.model)
    if model is None:
        hint = did_you_mean(engine.model, catalog.models)
        return [
            ("engine.model", f"unknown model {quote(engine.model)}{hint}; known: {', '.join(sorted(catalog.models))}")
        ]
    if engine.max_model_len > model.max_position_embeddings:
        return refuse(
            "engine.max_model_len",
            f"must be at most the model's {model.max_position_embeddings} positions, got {engine.max_model_len}",
        )
    return []


def _check_generation_reserve(engine: Engine) -> list[Problem]:
    reserve, length = engine.generation_reserve_tokens, engine.max_model_len
    room = f"must leave room for a prompt in max_model_len {length}, got {reserve}"
    return refuse("engine.generation_reserve_tokens", room) if reserve >= length else []


def check_vllm_startup(engine: Engine) -> list[Problem]:
    return [
        *skip_invalid(_batched_tokens_range, engine),
        *skip_invalid(_block_size, engine),
    ]


def _batched_tokens_range(engine: Engine) -> list[Problem]:
    """Below max_num_seqs, SchedulerConfig.verify_max_model_len (vllm/config/scheduler.py) raises
    ValueError. Above max_num_seqs x max_model_len the same file warns of "unexpected behavior": no
    step can hold more tokens than that, so a larger budget only inflates the start-up memory profile."""
    tokens, ceiling = engine.max_num_batched_tokens, engine.max_num_seqs * engine.max_model_len
    if tokens < engine.max_num_seqs:
        bound = f"at least engine.max_num_seqs {engine.max_num_seqs} (vLLM refuses to start otherwise)"
    elif tokens > ceiling:
        bound = f"at most engine.max_num_seqs x engine.max_model_len = {ceiling}"
    else:
        return []
    return refuse("engine.max_num_batched_tokens", f"must be {bound}, got {tokens}")


def _block_size(engine: Engine) -> list[Problem]:
    size = engine.block_size
    if size % KERNEL_BLOCK_SIZE_MULTIPLE or size > engine.max_model_len:
        return refuse(
            "engine.block_size",
            f"must be a multiple of {KERNEL_BLOCK_SIZE_MULTIPLE} (what vLLM's CUDA attention backends "
            f"take) and at most engine.max_model_len {engine.max_model_len}, got {size}",
        )
    return []
