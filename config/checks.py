"""Rules that relate several fields, or a field to the catalog. Each returns every problem found.

A problem is (field path, message); the message names the bad value and what is allowed, and the
path follows config.problems (`variants[1].image_tag`, `autoscaling.primary.schedules[4].start`).

Adding a check: write `def check_x(cfg: EnvironmentConfig, ...) -> list[Problem]` as if the config
were valid, and add it to the list in `check_environment`. It runs on every config whose fields it
reads are valid: a field that failed validation is INVALID (config.sections), and a check that
touches one raises InvalidInput and is skipped, since that field is already reported. Inside a loop
over items (variants, schedules), wrap the per-item part in `skip_invalid` so one bad item does not
skip the others. Test optional fields with `is_none(x)`, not `x is None` (which cannot see INVALID).
"""

from __future__ import annotations

import difflib
import importlib.metadata
import math
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

from config.capacity_checks import check_target_within_capacity
from config.deployed import Deployed
from config.deployed_checks import check_deployed
from config.platform_checks import check_blue_green_steps, check_inference_amis, check_instance_quotas
from config.problems import Problem, did_you_mean, quote
from config.scaling_checks import check_autoscaling
from config.schema import MUTABLE_TAGS, Catalog, Engine, EnvironmentConfig, InstanceType, Variant
from config.sections import INVALID, InvalidInput, is_none, skip_invalid
from config.vllm_rules import check_vllm_startup
from container.serving.contract import VLLM_LORA_RANKS, adapter_name_problem

__all__ = ["INVALID", "check_environment", "kv_cache_budget", "skip_invalid"]
GIB = 1024**3
PROD_MIN_BAKE_SECONDS = 600
MAX_ROLLBACK_ALARMS = 10  # AutoRollbackConfiguration accepts 1-10 alarms
ROLLBACK_ALARMS_PER_VARIANT = 3  # 5XX rate, time to first token p95, engine silent (constructs/serving_alarms.py)
MAX_ENVIRONMENT_VALUE_CHARS = 1024  # SageMaker CreateModel Environment values (botocore EnvironmentValue max)


def check_environment(
    sections: dict[str, Any], catalog: Catalog, env_name: str, deployed: Deployed | None = None
) -> list[Problem]:
    """Run every check whose inputs passed field validation (see the module docstring).

    `needs` lists the sections a check reads; a section that failed as a whole is INVALID and its
    checks are not even started. Inside a section that is partly valid, a check that touches an
    invalid field raises InvalidInput and is skipped.
    """
    cfg = EnvironmentConfig.model_construct(**sections)  # no validation: INVALID stays where it is
    checks: list[tuple[tuple[str, ...], Callable[[], list[Problem]]]] = [
        ((), lambda: _check_identity(cfg, env_name)),
        (("region",), lambda: _check_region(cfg)),
        (("variants",), lambda: _check_variants(cfg, catalog)),
        (("engine",), lambda: _check_engine(cfg, catalog)),
        (("engine",), lambda: check_vllm_startup(cfg.engine)),
        (("engine", "variants"), lambda: _check_vram_budget(cfg, catalog)),
        (("engine", "container"), lambda: _check_container(cfg, catalog)),
        (("container",), lambda: _check_warmup(cfg)),
        (("deployment",), lambda: _check_deployment(cfg, env_name)),
        (("deployment",), lambda: _check_prod_bake(cfg, env_name)),
        (("autoscaling", "variants"), lambda: check_autoscaling(cfg)),
        (("autoscaling", "variants"), lambda: check_deployed(cfg, deployed)),
        (("autoscaling", "variants", "planning"), lambda: check_target_within_capacity(cfg)),
        (("variants",), lambda: check_inference_amis(cfg, catalog)),
        (("deployment", "variants", "autoscaling"), lambda: check_blue_green_steps(cfg)),
        (("variants", "autoscaling", "endpoint_instance_quotas"), lambda: check_instance_quotas(cfg, catalog)),
    ]
    problems: list[Problem] = []
    for needs, check in checks:
        if all(sections[name] is not INVALID for name in needs):
            try:
                found = check()
            except InvalidInput:
                continue
            # One mistake, one message: a field an earlier check refused (an unknown instance type, say)
            # is not reported again by a later rule that compares it with something else.
            reported = {path for path, _ in problems}
            problems += [problem for problem in found if problem[0] not in reported]
    return problems


def _check_identity(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    return [
        *skip_invalid(_check_name, cfg, env_name),
        *skip_invalid(_check_environment_tag, cfg, env_name),
        *skip_invalid(_check_account_and_region, cfg),
    ]


def _check_name(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    if cfg.name != env_name:
        return [("name", f"must match the file's environment '{env_name}', got {quote(cfg.name)}")]
    return []


def _check_environment_tag(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    if cfg.tags.Environment != env_name:
        return [("tags.Environment", f"must be the environment name '{env_name}', got {quote(cfg.tags.Environment)}")]
    return []


def _check_account_and_region(cfg: EnvironmentConfig) -> list[Problem]:
    if is_none(cfg.account) != is_none(cfg.region):
        return [("account", "set both account and region, or neither (environment-agnostic)")]
    return []


def _check_region(cfg: EnvironmentConfig) -> list[Problem]:
    """A region aws-cdk-lib does not know fails synth inside jsii; refuse it here by name."""
    if is_none(cfg.region):
        return []
    known = known_regions()
    if cfg.region not in known:
        closest = ", ".join(difflib.get_close_matches(cfg.region, known, n=3)) or ", ".join(known[:3])
        return [
            (
                "region",
                f"not a region aws-cdk-lib {cdk_version()} knows (its table has {len(known)}; "
                f"closest: {closest}), got {quote(cfg.region)}",
            )
        ]
    return []


@cache
def known_regions() -> tuple[str, ...]:
    """The regions in aws-cdk-lib's own fact table (`aws_cdk.region_info.RegionInfo.regions`)."""
    # Starts jsii (on the pinned Node: config/toolchain.py): only when a config names a region.
    from aws_cdk.region_info import RegionInfo

    return tuple(sorted(region.name for region in RegionInfo.regions))


def cdk_version() -> str:
    return importlib.metadata.version("aws-cdk-lib")


def _check_variants(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    problems = skip_invalid(_check_variant_set, cfg)
    for index in range(len(cfg.variants)):
        problems += skip_invalid(_check_variant, cfg, index, catalog)
    return problems


def _check_variant_set(cfg: EnvironmentConfig) -> list[Problem]:
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
    return problems


def _check_variant(cfg: EnvironmentConfig, index: int, catalog: Catalog) -> list[Problem]:
    v, path = cfg.variants[index], f"variants[{index}]"
    return [
        *skip_invalid(_check_image_tag, v, path),
        *skip_invalid(_check_volume, v, path, catalog),
        *skip_invalid(_check_storage_key, cfg, v, catalog),
    ]


def _instance(v: Variant, catalog: Catalog) -> InstanceType:
    """The catalog entry of the variant's instance type; InvalidInput (reported once) when unknown."""
    instance = catalog.instance_types.get(v.instance_type)
    if instance is None:
        raise InvalidInput
    return instance


def _check_instance_type(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    if v.instance_type not in catalog.instance_types:
        known = ", ".join(sorted(catalog.instance_types))
        hint = did_you_mean(v.instance_type, catalog.instance_types)
        return [(f"{path}.instance_type", f"unknown instance type {quote(v.instance_type)}{hint}; known: {known}")]
    return []


def _check_volume(v: Variant, path: str, catalog: Catalog) -> list[Problem]:
    problems = _check_instance_type(v, path, catalog)
    if not problems and _instance(v, catalog).local_nvme and not is_none(v.volume_size_gb):
        problems.append(
            (
                f"{path}.volume_size_gb",
                f"{v.instance_type} has local NVMe storage; SageMaker refuses VolumeSizeInGB on it, "
                f"got {v.volume_size_gb} (remove the field)",
            )
        )
    return problems


def _check_storage_key(cfg: EnvironmentConfig, v: Variant, catalog: Catalog) -> list[Problem]:
    if _instance(v, catalog).local_nvme and not is_none(cfg.endpoint_kms_key_arn):
        return [
            (
                "endpoint_kms_key_arn",
                f"variant '{v.name}' runs on {v.instance_type}, which has local NVMe storage; "
                "a storage KMS key does not apply to it (remove the field)",
            )
        ]
    return []


def _check_image_tag(v: Variant, path: str) -> list[Problem]:
    if v.image_tag in MUTABLE_TAGS:
        return [(f"{path}.image_tag", f"must be an immutable tag or sha256 digest, got mutable '{v.image_tag}'")]
    return []


def _check_engine(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
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
        problems.append(
            (
                "engine.adapters",
                f"the names joined by commas take {joined} characters; SageMaker takes at most "
                f"{MAX_ENVIRONMENT_VALUE_CHARS} per container environment value",
            )
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
        return [
            (
                "engine.max_model_len",
                f"must be at most the model's {model.max_position_embeddings} positions, got {engine.max_model_len}",
            )
        ]
    return []


def _check_generation_reserve(engine: Engine) -> list[Problem]:
    if engine.generation_reserve_tokens >= engine.max_model_len:
        return [
            (
                "engine.generation_reserve_tokens",
                f"must leave room for a prompt in max_model_len {engine.max_model_len}, "
                f"got {engine.generation_reserve_tokens}",
            )
        ]
    return []


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
    if cfg.engine.model not in catalog.models:
        return []
    problems = []
    for index in range(len(cfg.variants)):
        problems += skip_invalid(_check_variant_vram, cfg, index, catalog)
    return problems


def _check_variant_vram(cfg: EnvironmentConfig, index: int, catalog: Catalog) -> list[Problem]:
    engine, v = cfg.engine, cfg.variants[index]
    if v.instance_type not in catalog.instance_types:
        return []
    b = kv_cache_budget(cfg, catalog, v.instance_type)
    arithmetic = (
        f"{b['gpu_memory_gib']:.0f} GiB x {engine.gpu_memory_utilization} = {b['usable_gib']:.2f} GiB usable, "
        f"minus {b['weights_gib']} GiB weights and {b['overhead_gib']} GiB runtime overhead "
        f"leaves {b['kv_available_gib']:.2f} GiB for the KV cache"
    )
    path = f"variants[{index}].instance_type"
    if b["kv_available_gib"] < b["full_context_gib"]:
        return [
            (
                path,
                f"{v.instance_type} cannot hold one {engine.max_model_len}-token sequence "
                f"({b['full_context_gib']:.2f} GiB of KV cache; vLLM refuses to start): {arithmetic}",
            )
        ]
    if b["kv_available_gib"] < b["kv_needed_gib"]:
        return [
            (
                path,
                f"{v.instance_type} is too small for engine.max_num_seqs {engine.max_num_seqs} x "
                f"engine.kv_cache_min_tokens_per_sequence {engine.kv_cache_min_tokens_per_sequence} tokens "
                f"x {b['kv_bytes_per_token'] // 1024} KiB/token = {b['kv_needed_gib']:.2f} GiB of KV cache: "
                f"{arithmetic} ({b['tokens_per_sequence']:.0f} tokens per sequence); "
                "lower max_num_seqs or pick a larger GPU",
            )
        ]
    return []


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


def _check_warmup(cfg: EnvironmentConfig) -> list[Problem]:
    """Warmup runs inside the startup health check window (/ping answers 200 only after it), so a
    warmup allowed to outlast that window lets SageMaker fail the instance before the container
    gives up on its own warmup with a clear log line (container/serving/supervisor.py)."""
    container = cfg.container
    if container.warmup_timeout_seconds >= container.startup_health_check_timeout_seconds:
        return [
            (
                "container.warmup_timeout_seconds",
                f"must be less than container.startup_health_check_timeout_seconds "
                f"{container.startup_health_check_timeout_seconds} (warmup runs inside it), "
                f"got {container.warmup_timeout_seconds}",
            )
        ]
    return []


def steps_to_full_traffic(cfg: EnvironmentConfig) -> int:
    """How many bake waits a blue/green update goes through before all traffic is on green."""
    d = cfg.deployment
    if d.traffic_routing == "ALL_AT_ONCE" or is_none(d.step_size):
        return 1
    if d.traffic_routing == "CANARY":
        return 2
    largest = max(v.initial_instance_count for v in cfg.variants)
    if d.step_size.type == "CAPACITY_PERCENT":
        return math.ceil(100 / d.step_size.value)
    return math.ceil(largest / d.step_size.value)


def _check_deployment(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    return [*skip_invalid(_check_routing_step, cfg), *skip_invalid(_check_execution_timeout, cfg)]


def _check_routing_step(cfg: EnvironmentConfig) -> list[Problem]:
    d = cfg.deployment
    if d.traffic_routing not in ("CANARY", "LINEAR"):
        return []
    if is_none(d.step_size):
        return [("deployment.step_size", f"{d.traffic_routing} needs a step_size (type and value)")]
    return []  # its size against the fleet: config.platform_checks.check_blue_green_steps


def _check_prod_bake(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    """Every routing type bakes: ALL_AT_ONCE waits WaitIntervalInSeconds with all traffic on the new
    fleet before it terminates the old one (BlueGreenUpdatePolicy), and only during that wait can a
    rollback alarm send traffic back. A zero bake in prod leaves the alarms no window."""
    d = cfg.deployment
    if env_name == "prod" and d.wait_interval_seconds < PROD_MIN_BAKE_SECONDS:
        return [
            (
                "deployment.wait_interval_seconds",
                f"prod bakes each step at least {PROD_MIN_BAKE_SECONDS} s ({d.traffic_routing} included: the "
                f"rollback alarms act only during the bake), got {d.wait_interval_seconds}",
            )
        ]
    return []


def _check_execution_timeout(cfg: EnvironmentConfig) -> list[Problem]:
    d = cfg.deployment
    waits = steps_to_full_traffic(cfg) * d.wait_interval_seconds + d.termination_wait_seconds
    if d.maximum_execution_timeout_seconds <= waits:
        return [
            (
                "deployment.maximum_execution_timeout_seconds",
                f"must exceed the waits added up ({steps_to_full_traffic(cfg)} x wait_interval_seconds "
                f"{d.wait_interval_seconds} + termination_wait_seconds {d.termination_wait_seconds} = {waits} s), "
                f"got {d.maximum_execution_timeout_seconds} (allowed up to 28800)",
            )
        ]
    return []
