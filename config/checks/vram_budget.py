"""The VRAM budget: the model's weights plus the KV cache for engine.max_num_seqs concurrent
sequences must fit in each variant's GPU memory (docs/reference/configuration.md, "VRAM budget"), on every
instance type the variant may run on: one model and one set of engine settings serve all its pools
(no ModelNameOverride), so a fallback must hold them as the preferred type does.

Conversations make long contexts: a turn carries the system prompt and the history so far. So the
KV cache must also hold `planning.capacity.<type>.concurrent_sequences` sequences at the p95 context
`bin/loadtest`'s default workload produces (config/domain/workload.yaml's `conversation:` section). That p95
is computed from the file's distributions alone, by simulating sessions with a fixed seed (no server,
the same figure on every run): config.domain.workload. An assumed figure that does not fit is refused; a measured one is a
warning (`kv_context_warnings`): the measurement ran on the real engine, which preempted or not.
"""

from __future__ import annotations

from config.checks.variants import pool_types
from config.domain.workload import engine_contexts
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


# --- the checks ------------------------------------------------------------------------------------


def check_vram_budget(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """The weights plus the KV cache for max_num_seqs concurrent sequences must fit in the GPU, and the
    KV cache must hold the assumed concurrent_sequences at the workload's p95 context."""
    if cfg.engine.model not in catalog.models:
        return []
    problems = []
    for index in range(len(cfg.variants)):
        problems += skip_invalid(_check_variant_vram, cfg, index, catalog)
    return problems


def _check_variant_vram(cfg: EnvironmentConfig, index: int, catalog: Catalog) -> list[Problem]:
    problems = []
    for field, instance_type in pool_types(cfg.variants[index]):
        path = f"variants[{index}].{field}"
        found = skip_invalid(_check_type_vram, cfg, catalog, instance_type, path)
        problems += found or skip_invalid(_check_type_contexts, cfg, catalog, instance_type, path)
    return problems


def _arithmetic(cfg: EnvironmentConfig, b: dict[str, float]) -> str:
    return (
        f"{b['gpu_memory_gib']:.0f} GiB x {cfg.engine.gpu_memory_utilization} = {b['usable_gib']:.2f} GiB usable, "
        f"minus {b['weights_gib']} GiB weights and {b['overhead_gib']} GiB runtime overhead "
        f"leaves {b['kv_available_gib']:.2f} GiB for the KV cache"
    )


def _check_type_vram(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, path: str) -> list[Problem]:
    if instance_type not in catalog.instance_types:
        return []  # an unknown type is reported by config.checks.variants
    engine = cfg.engine
    b = kv_cache_budget(cfg, catalog, instance_type)
    arithmetic = _arithmetic(cfg, b)
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


def context_shortfall(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> str | None:
    """Why the KV cache of `instance_type` cannot hold planning.capacity's concurrent_sequences at the
    workload's p95 context, with the numbers; None when it can (or nothing says how many or how long)."""
    capacity = cfg.planning.capacity.get(instance_type)
    contexts = engine_contexts(cfg)
    if capacity is None or contexts is None or instance_type not in catalog.instance_types:
        return None
    b = kv_cache_budget(cfg, catalog, instance_type)
    needed = capacity.concurrent_sequences * contexts.p95_tokens * b["kv_bytes_per_token"] / GIB
    if needed <= b["kv_available_gib"]:
        return None
    held = int(max(b["kv_available_gib"], 0) * GIB / b["kv_bytes_per_token"] / contexts.p95_tokens)
    return (
        f"{instance_type}'s KV cache cannot hold planning.capacity.{instance_type}.concurrent_sequences "
        f"{capacity.concurrent_sequences} ({capacity.provenance()}) at the conversation workload's "
        f"{contexts.describe()}, config/domain/workload.yaml): {capacity.concurrent_sequences} x "
        f"{contexts.p95_tokens:,} tokens x {b['kv_bytes_per_token'] // 1024} KiB/token = {needed:.2f} GiB, but "
        f"{_arithmetic(cfg, b)}: it holds {held} such sequences, and vLLM preempts the rest"
    )


def _check_type_contexts(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, path: str) -> list[Problem]:
    capacity = cfg.planning.capacity.get(instance_type)
    if capacity is None or capacity.measured is not None:
        return []  # a measured figure is a warning (kv_context_warnings): the engine ran it
    shortfall = context_shortfall(cfg, catalog, instance_type)
    if shortfall is None:
        return []
    return refuse(
        path,
        f"{shortfall}; measure it (`bin/loadtest ENV --variant NAME --write-config`), lower "
        "concurrent_sequences, or pick a larger GPU",
    )


def kv_context_warnings(cfg: EnvironmentConfig, catalog: Catalog) -> list[str]:
    """A measured concurrent_sequences the arithmetic says the KV cache cannot hold at the workload's p95
    context: the engine served it, so it is not refused, but the measurement deserves a look."""
    warnings = []
    for instance_type, capacity in sorted(cfg.planning.capacity.items()):
        if capacity.measured is None or not any(instance_type in v.instance_types for v in cfg.variants):
            continue
        shortfall = context_shortfall(cfg, catalog, instance_type)
        if shortfall is not None:
            warnings.append(f"{cfg.name}: {shortfall} (a measured figure: check that its run used conversations)")
    return warnings


def kv_sequences(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> int:
    """The sequences the type's KV cache holds at the workload's p95 context (the arithmetic above): the
    cap on an assumed batch (config.domain.calibration.derived_capacity), since vLLM would preempt the rest."""
    contexts = engine_contexts(cfg)
    if contexts is None or instance_type not in catalog.instance_types:
        return cfg.engine.max_num_seqs
    b = kv_cache_budget(cfg, catalog, instance_type)
    return max(1, int(max(b["kv_available_gib"], 0) * GIB / b["kv_bytes_per_token"] / contexts.p95_tokens))
