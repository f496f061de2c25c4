"""The VRAM budget: the model's weights plus the KV cache for engine.max_num_seqs concurrent
sequences must fit in each variant's GPU memory (docs/configuration.md, "VRAM budget"), on every
instance type the variant may run on: one model and one set of engine settings serve all its pools
(no ModelNameOverride), so a fallback must hold them as the preferred type does."""

from __future__ import annotations

from config.checks.variants import pool_types
from config.problems import Problem, refuse
from config.schema import Catalog, EnvironmentConfig
from config.sections import skip_invalid

GIB = 1024**3


def kv_cache_budget(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> dict[str, float]:
    """GPU memory arithmetic for one instance type: what the KV cache gets and what it needs."""
    engine = cfg.engine
    model = catalog.models[engine.model]
    instance = catalog.instance_types[instance_type]
    usable = instance.gpu_memory_gib * engine.gpu_memory_utilization
    available = usable - model.weights_gib - model.runtime_overhead_gib
    per_token = model.kv_bytes_per_token
    return {
        "gpu_memory_gib": instance.gpu_memory_gib,
        "usable_gib": usable,
        "weights_gib": model.weights_gib,
        "overhead_gib": model.runtime_overhead_gib,
        "kv_available_gib": available,
        "kv_bytes_per_token": per_token,
        "kv_needed_gib": engine.max_num_seqs * engine.kv_cache_min_tokens_per_sequence * per_token / GIB,
        "full_context_gib": engine.max_model_len * per_token / GIB,
        "tokens_per_sequence": max(available, 0) * GIB / per_token / engine.max_num_seqs,
    }


def check_vram_budget(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """The weights plus the KV cache for max_num_seqs concurrent sequences must fit in the GPU."""
    if cfg.engine.model not in catalog.models:
        return []
    problems = []
    for index in range(len(cfg.variants)):
        problems += skip_invalid(_check_variant_vram, cfg, index, catalog)
    return problems


def _check_variant_vram(cfg: EnvironmentConfig, index: int, catalog: Catalog) -> list[Problem]:
    problems = []
    for field, instance_type in pool_types(cfg.variants[index]):
        problems += skip_invalid(_check_type_vram, cfg, catalog, instance_type, f"variants[{index}].{field}")
    return problems


def _check_type_vram(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, path: str) -> list[Problem]:
    if instance_type not in catalog.instance_types:
        return []  # an unknown type is reported by config.checks.variants
    engine = cfg.engine
    b = kv_cache_budget(cfg, catalog, instance_type)
    arithmetic = (
        f"{b['gpu_memory_gib']:.0f} GiB x {engine.gpu_memory_utilization} = {b['usable_gib']:.2f} GiB usable, "
        f"minus {b['weights_gib']} GiB weights and {b['overhead_gib']} GiB runtime overhead "
        f"leaves {b['kv_available_gib']:.2f} GiB for the KV cache"
    )
    if b["kv_available_gib"] < b["full_context_gib"]:
        return refuse(
            path,
            f"{instance_type} cannot hold one {engine.max_model_len}-token sequence "
            f"({b['full_context_gib']:.2f} GiB of KV cache; vLLM refuses to start): {arithmetic}",
        )
    if b["kv_available_gib"] < b["kv_needed_gib"]:
        return refuse(
            path,
            f"{instance_type} is too small for engine.max_num_seqs {engine.max_num_seqs} x "
            f"engine.kv_cache_min_tokens_per_sequence {engine.kv_cache_min_tokens_per_sequence} tokens "
            f"x {b['kv_bytes_per_token'] // 1024} KiB/token = {b['kv_needed_gib']:.2f} GiB of KV cache: "
            f"{arithmetic} ({b['tokens_per_sequence']:.0f} tokens per sequence); "
            "lower max_num_seqs or pick a larger GPU",
        )
    return []
