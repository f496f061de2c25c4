"""Rules that relate several fields, or a field to the catalog. Each returns every problem found.

A problem is (field path, message); the message names the bad value and what is allowed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from config.deployed import Deployed
from config.deployed_checks import check_deployed
from config.scaling_checks import Problem, check_autoscaling
from config.schema import MUTABLE_TAGS, Catalog, EnvironmentConfig
from container.serving.contract import VLLM_LORA_RANKS

INVALID = object()  # a section that failed field validation; checks needing it are skipped
GIB = 1024**3
PROD_MIN_BAKE_SECONDS = 600
MAX_ROLLBACK_ALARMS = 10  # AutoRollbackConfiguration accepts 1-10 alarms
ROLLBACK_ALARMS_PER_VARIANT = 3  # 5XX rate, p99 latency, engine silent (constructs/serving_alarms.py)


def check_environment(
    sections: dict[str, Any], catalog: Catalog, env_name: str, deployed: Deployed | None = None
) -> list[Problem]:
    """Run every check whose sections passed field validation (see config.loader)."""
    cfg = cast(EnvironmentConfig, SimpleNamespace(**sections))
    checks: list[tuple[tuple[str, ...], Callable[[], list[Problem]]]] = [
        (("name", "tags", "account", "region"), lambda: _check_identity(cfg, env_name)),
        (("variants", "endpoint_kms_key_arn"), lambda: _check_variants(cfg, catalog)),
        (("engine",), lambda: _check_engine(cfg, catalog)),
        (("engine", "variants"), lambda: _check_vram_budget(cfg, catalog)),
        (("engine", "container"), lambda: _check_container(cfg, catalog)),
        (("deployment", "variants"), lambda: _check_deployment(cfg, env_name)),
        (("autoscaling", "variants"), lambda: check_autoscaling(cfg)),
        (("autoscaling", "variants"), lambda: check_deployed(cfg, deployed)),
    ]
    problems: list[Problem] = []
    for needs, check in checks:
        if all(sections[name] is not INVALID for name in needs):
            problems += check()
    return problems


def _check_identity(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    problems = []
    if cfg.name != env_name:
        problems.append(("name", f"must match the file's environment '{env_name}', got '{cfg.name}'"))
    if cfg.tags.Environment != env_name:
        problems.append(
            ("tags.Environment", f"must be the environment name '{env_name}', got '{cfg.tags.Environment}'")
        )
    if (cfg.account is None) != (cfg.region is None):
        problems.append(("account", "set both account and region, or neither (environment-agnostic)"))
    return problems


def _check_variants(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    problems = []
    for name, count in Counter(v.name for v in cfg.variants).items():
        if count > 1:
            problems.append(("variants", f"variant names must be unique, '{name}' appears {count} times"))
    if len(cfg.variants) * ROLLBACK_ALARMS_PER_VARIANT > MAX_ROLLBACK_ALARMS:
        problems.append(
            (
                "variants",
                f"at most {MAX_ROLLBACK_ALARMS // ROLLBACK_ALARMS_PER_VARIANT} variants (each adds "
                f"{ROLLBACK_ALARMS_PER_VARIANT} rollback alarms, SageMaker takes {MAX_ROLLBACK_ALARMS}), "
                f"got {len(cfg.variants)}",
            )
        )
    if all(v.initial_weight == 0 for v in cfg.variants):
        problems.append(("variants", "at least one variant needs initial_weight > 0, all are 0"))
    known = ", ".join(sorted(catalog.instance_types))
    for v in cfg.variants:
        path = f"variants.{v.name}"
        if v.image_tag in MUTABLE_TAGS:
            problems.append(
                (f"{path}.image_tag", f"must be an immutable tag or sha256 digest, got mutable '{v.image_tag}'")
            )
        instance = catalog.instance_types.get(v.instance_type)
        if instance is None:
            problems.append((f"{path}.instance_type", f"unknown instance type '{v.instance_type}'; known: {known}"))
            continue
        if instance.local_nvme and v.volume_size_gb is not None:
            problems.append(
                (
                    f"{path}.volume_size_gb",
                    f"{v.instance_type} has local NVMe storage; SageMaker refuses VolumeSizeInGB on it, "
                    f"got {v.volume_size_gb} (remove the field)",
                )
            )
        if instance.local_nvme and cfg.endpoint_kms_key_arn is not None:
            problems.append(
                (
                    "endpoint_kms_key_arn",
                    f"variant '{v.name}' runs on {v.instance_type}, which has local NVMe storage; "
                    "a storage KMS key does not apply to it (remove the field)",
                )
            )
    return problems


def _check_engine(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    engine = cfg.engine
    problems = []
    if engine.max_lora_rank not in VLLM_LORA_RANKS:
        allowed = ", ".join(map(str, VLLM_LORA_RANKS))
        problems.append(("engine.max_lora_rank", f"must be one of {allowed}, got {engine.max_lora_rank}"))
    for name, count in Counter(engine.adapters).items():
        if count > 1:
            problems.append(("engine.adapters", f"adapter names must be unique, '{name}' appears {count} times"))
    model = catalog.models.get(engine.model)
    if model is None:
        problems.append(("engine.model", f"unknown model '{engine.model}'; known: {', '.join(sorted(catalog.models))}"))
    elif engine.max_model_len > model.max_position_embeddings:
        problems.append(
            (
                "engine.max_model_len",
                f"must be at most the model's {model.max_position_embeddings} positions, got {engine.max_model_len}",
            )
        )
    if engine.generation_reserve_tokens >= engine.max_model_len:
        problems.append(
            (
                "engine.generation_reserve_tokens",
                f"must leave room for a prompt in max_model_len {engine.max_model_len}, "
                f"got {engine.generation_reserve_tokens}",
            )
        )
    return problems


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


def _check_vram_budget(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """The weights plus the KV cache for max_num_seqs concurrent sequences must fit in the GPU."""
    engine = cfg.engine
    if engine.model not in catalog.models:
        return []
    problems = []
    for v in cfg.variants:
        if v.instance_type not in catalog.instance_types:
            continue
        b = kv_cache_budget(cfg, catalog, v.instance_type)
        arithmetic = (
            f"{b['gpu_memory_gib']:.0f} GiB x {engine.gpu_memory_utilization} = {b['usable_gib']:.2f} GiB usable, "
            f"minus {b['weights_gib']} GiB weights and {b['overhead_gib']} GiB runtime overhead "
            f"leaves {b['kv_available_gib']:.2f} GiB for the KV cache"
        )
        path = f"variants.{v.name}.instance_type"
        if b["kv_available_gib"] < b["full_context_gib"]:
            problems.append(
                (
                    path,
                    f"{v.instance_type} cannot hold one {engine.max_model_len}-token sequence "
                    f"({b['full_context_gib']:.2f} GiB of KV cache; vLLM refuses to start): {arithmetic}",
                )
            )
        elif b["kv_available_gib"] < b["kv_needed_gib"]:
            problems.append(
                (
                    path,
                    f"{v.instance_type} is too small for engine.max_num_seqs {engine.max_num_seqs} x "
                    f"engine.kv_cache_min_tokens_per_sequence {engine.kv_cache_min_tokens_per_sequence} tokens "
                    f"x {b['kv_bytes_per_token'] // 1024} KiB/token = {b['kv_needed_gib']:.2f} GiB of KV cache: "
                    f"{arithmetic} ({b['tokens_per_sequence']:.0f} tokens per sequence); "
                    "lower max_num_seqs or pick a larger GPU",
                )
            )
    return problems


def _check_container(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    model = catalog.models.get(cfg.engine.model)
    timeout = cfg.container.startup_health_check_timeout_seconds
    if model is not None and timeout < model.min_startup_seconds:
        return [
            (
                "container.startup_health_check_timeout_seconds",
                f"a {model.parameters_billion:g}B model needs at least {model.min_startup_seconds} s to pull, "
                f"load, capture CUDA graphs and warm up, got {timeout} s (allowed {model.min_startup_seconds}-3600)",
            )
        ]
    return []


def steps_to_full_traffic(cfg: EnvironmentConfig) -> int:
    """How many bake waits a blue/green update goes through before all traffic is on green."""
    d = cfg.deployment
    if d.traffic_routing == "ALL_AT_ONCE" or d.step_size is None:
        return 1
    if d.traffic_routing == "CANARY":
        return 2
    largest = max(v.initial_instance_count for v in cfg.variants)
    if d.step_size.type == "CAPACITY_PERCENT":
        return math.ceil(100 / d.step_size.value)
    return math.ceil(largest / d.step_size.value)


def _check_deployment(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    d = cfg.deployment
    problems = []
    if d.traffic_routing in ("CANARY", "LINEAR"):
        if d.step_size is None:
            problems.append(("deployment.step_size", f"{d.traffic_routing} needs a step_size (type and value)"))
        else:
            problems.extend(_check_step_size(cfg))
    if env_name == "prod" and d.traffic_routing != "ALL_AT_ONCE" and d.wait_interval_seconds < PROD_MIN_BAKE_SECONDS:
        problems.append(
            (
                "deployment.wait_interval_seconds",
                f"prod bakes each step at least {PROD_MIN_BAKE_SECONDS} s, got {d.wait_interval_seconds}",
            )
        )
    waits = steps_to_full_traffic(cfg) * d.wait_interval_seconds + d.termination_wait_seconds
    if d.maximum_execution_timeout_seconds <= waits:
        problems.append(
            (
                "deployment.maximum_execution_timeout_seconds",
                f"must exceed the waits added up ({steps_to_full_traffic(cfg)} x wait_interval_seconds "
                f"{d.wait_interval_seconds} + termination_wait_seconds {d.termination_wait_seconds} = {waits} s), "
                f"got {d.maximum_execution_timeout_seconds} (allowed up to 28800)",
            )
        )
    return problems


def _check_step_size(cfg: EnvironmentConfig) -> list[Problem]:
    d = cfg.deployment
    step = d.step_size
    assert step is not None
    path = "deployment.step_size.value"
    if step.type == "CAPACITY_PERCENT":
        low, high = (1, 50) if d.traffic_routing == "CANARY" else (10, 50)
        if not low <= step.value <= high:
            return [(path, f"{d.traffic_routing} capacity must be {low}-50% of each variant, got {step.value}%")]
        return []
    problems = []
    for v in cfg.variants:
        half = v.initial_instance_count / 2
        if step.value > half:
            problems.append(
                (
                    path,
                    f"{d.traffic_routing} size {step.value} instance(s) is more than 50% of variant '{v.name}' "
                    f"({v.initial_instance_count} instance(s)); use CAPACITY_PERCENT or at most {int(half)}",
                )
            )
    return problems
