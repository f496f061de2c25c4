"""The container's start-up and exit: a health check window long enough for the model, warmup inside it, and a
sick instance gone within it."""

from __future__ import annotations

from config.problems import Problem, refuse
from config.schema import ADMISSION_DEADLINE_TTFT_MULTIPLE, INVOCATION_TIMEOUT_MS, Catalog, EnvironmentConfig


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


def check_unhealthy_exit(cfg: EnvironmentConfig) -> list[Problem]:
    """A GPU check that keeps failing ends the container after `unhealthy_exit_seconds` plus a drain of up
    to `drain_seconds` (container/serving/supervisor.py); SageMaker then replaces the instance. The one
    /ping bound SageMaker documents is the startup window (ContainerStartupHealthCheckTimeoutInSeconds,
    60-3600 s: a new instance that does not answer 200 within it fails); what it does with a serving
    instance that answers 503 is not documented. So a sick instance is held to the same bound as a
    starting one: it must be gone before that window's length has passed."""
    container = cfg.container
    total = container.unhealthy_exit_seconds + container.drain_seconds
    if total >= container.startup_health_check_timeout_seconds:
        return refuse(
            "container.unhealthy_exit_seconds",
            f"plus container.drain_seconds ({container.drain_seconds}) must be less than "
            f"container.startup_health_check_timeout_seconds {container.startup_health_check_timeout_seconds} "
            f"(a sick instance must exit within the window a starting one gets), got "
            f"{container.unhealthy_exit_seconds} (total {total} s)",
        )
    return []


def check_admission_deadline(cfg: EnvironmentConfig) -> list[Problem]:
    """A deadline past SageMaker's 60 s invocation timeout would admit requests that time out anyway:
    the admission check would never fail them fast (container/serving/admission.py)."""
    deadline = cfg.admission_deadline_ms
    if deadline <= INVOCATION_TIMEOUT_MS:
        return []
    if cfg.container.admission_deadline_ms is None:
        return refuse(
            "container.admission_deadline_ms",
            f"defaults to {ADMISSION_DEADLINE_TTFT_MULTIPLE} x alarms.ttft_p95_ms = {deadline} ms, over SageMaker's "
            f"{INVOCATION_TIMEOUT_MS} ms invocation timeout: set it (allowed 1-{INVOCATION_TIMEOUT_MS})",
        )
    return refuse(
        "container.admission_deadline_ms",
        f"must be at most SageMaker's {INVOCATION_TIMEOUT_MS} ms invocation timeout (allowed "
        f"1-{INVOCATION_TIMEOUT_MS}), got {deadline}",
    )
