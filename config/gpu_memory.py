"""The GPU-memory alarm's threshold, derived from the engine's memory share (issue 50 §7).

vLLM takes `engine.gpu_memory_utilization` of each GPU at start (weights, activations and the KV cache it
preallocates) and the CUDA context with its libraries' workspaces comes on top of that; so a healthy, idle
instance reads about share + context in SageMaker's GPUMemoryUtilization, and 95 % with a 0.92 share raised a
ticket on every quiet night. The threshold is that baseline plus a margin: above it something other than the
engine holds GPU memory. The context's size is not measured here (no GPU): 1 GiB is assumed (CUDA context,
cuBLAS and NCCL workspaces on one GPU). GPUMemoryUtilization is summed over an instance's GPUs (DESIGN.md 3.2).
"""

from __future__ import annotations

from config.problems import Problem, refuse
from config.schema import Catalog, EnvironmentConfig, InstanceType

CUDA_CONTEXT_GIB = 1.0  # ASSUMED, not measured
MARGIN_PERCENT = 2.0


def healthy_percent(cfg: EnvironmentConfig, instance: InstanceType) -> float:
    """What one GPU of a healthy instance reads: the engine's share plus the CUDA context."""
    return 100 * cfg.engine.gpu_memory_utilization + 100 * CUDA_CONTEXT_GIB / instance.gpu_memory_gib


def gpu_memory_alarm_percent(cfg: EnvironmentConfig, instance: InstanceType) -> float:
    """The alarm's threshold for an instance: alarms.gpu_memory_percent, or the healthy baseline plus the
    margin (at most 99 % of a GPU); either way times the GPU count, as SageMaker sums the metric."""
    explicit = cfg.alarms.gpu_memory_percent
    per_gpu = explicit if explicit is not None else min(99.0, healthy_percent(cfg, instance) + MARGIN_PERCENT)
    return round(per_gpu, 1) * instance.gpu_count


def check_gpu_memory_alarm(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """An explicit threshold at or below what a healthy instance reads would alarm all the time."""
    explicit = cfg.alarms.gpu_memory_percent
    if explicit is None:
        return []
    for variant in cfg.variants:
        instance = catalog.instance_types.get(variant.instance_type)
        if instance is not None and explicit <= healthy_percent(cfg, instance):
            return refuse(
                "alarms.gpu_memory_percent",
                f"a healthy {variant.instance_type} already reads about {healthy_percent(cfg, instance):.1f} % "
                f"(engine.gpu_memory_utilization {cfg.engine.gpu_memory_utilization} plus ~{CUDA_CONTEXT_GIB:g} GiB "
                f"of CUDA context on {instance.gpu_memory_gib:g} GiB): the alarm would never clear; got {explicit:g} "
                "(leave it out to derive it)",
            )
    return []
