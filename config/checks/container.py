"""The container's start-up: a health check window long enough for the model, and warmup inside it."""

from __future__ import annotations

from config.problems import Problem, refuse
from config.schema import Catalog, EnvironmentConfig


def check_startup_timeout(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    model = catalog.models.get(cfg.engine.model)
    timeout = cfg.container.startup_health_check_timeout_seconds
    if model is not None and timeout < model.min_startup_seconds:
        return refuse(
            "container.startup_health_check_timeout_seconds",
            f"a {model.parameters_billion:g}B model needs at least {model.min_startup_seconds} s to pull, "
            f"load, capture CUDA graphs and warm up, got {timeout} s (allowed {model.min_startup_seconds}-3600)",
        )
    return []


def check_warmup(cfg: EnvironmentConfig) -> list[Problem]:
    """Warmup runs inside the startup health check window (/ping answers 200 only after it), so a
    warmup allowed to outlast that window lets SageMaker fail the instance before the container
    gives up on its own warmup with a clear log line (container/serving/supervisor.py)."""
    container = cfg.container
    if container.warmup_timeout_seconds >= container.startup_health_check_timeout_seconds:
        return refuse(
            "container.warmup_timeout_seconds",
            f"must be less than container.startup_health_check_timeout_seconds "
            f"{container.startup_health_check_timeout_seconds} (warmup runs inside it), "
            f"got {container.warmup_timeout_seconds}",
        )
    return []
