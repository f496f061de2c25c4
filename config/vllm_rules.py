"""vLLM start-up rules our engine settings can break, checked at synth instead of on the instance.

Read from the vLLM 0.33.0 wheel (the version the image pins); each rule names its source file.
Rules already enforced elsewhere: `--max-lora-rank` choices (contract.VLLM_LORA_RANKS, checks.py),
gpu_memory_utilization in (0, 1] (schema.py), one max_model_len sequence fitting the KV cache and
max_model_len within the model's positions (checks.py, VRAM budget and catalog).
Rules our settings cannot reach: max_num_batched_tokens < max_model_len is refused only with chunked
prefill off (we never turn it off); max_cpu_loras >= max_loras (we never set max_cpu_loras).
"""

from __future__ import annotations

from config.problems import Problem
from config.schema import Engine
from config.sections import skip_invalid

# Every CUDA attention backend vLLM 0.33 picks for a non-MLA model on Ampere/Ada/Turing GPUs
# (g5 A10G, g6 L4, p4d A100, g4dn T4; priority list in vllm/platforms/cuda.py) takes a block size
# that is a multiple of 16: FLASH_ATTN and TRITON_ATTN and FLEX_ATTENTION return [MultipleOf(16)]
# and FLASHINFER [16, 32, 64] from get_supported_kernel_block_sizes
# (vllm/v1/attention/backends/{flash_attn,triton_attn,flex_attention,flashinfer}.py), and
# AttentionBackend.supports_block_size (vllm/v1/attention/backend.py) accepts a cache block size
# that is a multiple of one of them. Any other size leaves no backend: vLLM refuses to start.
KERNEL_BLOCK_SIZE_MULTIPLE = 16


def check_vllm_startup(engine: Engine) -> list[Problem]:
    return [
        *skip_invalid(_batched_tokens_cover_sequences, engine),
        *skip_invalid(_batched_tokens_not_beyond_sequences, engine),
        *skip_invalid(_block_size, engine),
    ]


def _batched_tokens_cover_sequences(engine: Engine) -> list[Problem]:
    """SchedulerConfig.verify_max_model_len (vllm/config/scheduler.py) raises ValueError."""
    if engine.max_num_batched_tokens < engine.max_num_seqs:
        return [
            (
                "engine.max_num_batched_tokens",
                f"must be at least engine.max_num_seqs {engine.max_num_seqs} (vLLM refuses to start "
                f"otherwise), got {engine.max_num_batched_tokens}",
            )
        ]
    return []


def _batched_tokens_not_beyond_sequences(engine: Engine) -> list[Problem]:
    """vllm/config/scheduler.py warns of "unexpected behavior" above max_num_seqs x max_model_len: no
    step can hold more tokens than that, so a larger budget only inflates the start-up memory profile."""
    ceiling = engine.max_num_seqs * engine.max_model_len
    if engine.max_num_batched_tokens > ceiling:
        return [
            (
                "engine.max_num_batched_tokens",
                f"must be at most engine.max_num_seqs x engine.max_model_len = {ceiling}, "
                f"got {engine.max_num_batched_tokens}",
            )
        ]
    return []


def _block_size(engine: Engine) -> list[Problem]:
    size = engine.block_size
    if size % KERNEL_BLOCK_SIZE_MULTIPLE or size > engine.max_model_len:
        return [
            (
                "engine.block_size",
                f"must be a multiple of {KERNEL_BLOCK_SIZE_MULTIPLE} (what vLLM's CUDA attention backends "
                f"take) and at most engine.max_model_len {engine.max_model_len}, got {size}",
            )
        ]
    return []
