"""The blue/green update's MaximumExecutionTimeoutInSeconds, derived from its parts (issue 50 §5).

Before traffic moves, a blue/green update may spend each timeout SageMaker gives it: provisioning the green
fleet across its pools (`VariantInstanceProvisionTimeoutInSeconds`; unset, SageMaker's default is not
documented, so the API's maximum, 3600), copying the model data (`ModelDataDownloadTimeoutInSeconds`) and
starting the container (`ContainerStartupHealthCheckTimeoutInSeconds`, both the config's startup timeout:
constructs/inference_endpoint.py); then one bake per traffic step and the termination wait
(BlueGreenUpdatePolicy). No timeout bounds the image pull: the margin stands for it (a 10.6 GB image's
scale-out took 346 s at P50 before container caching, DESIGN.md 3.2b; ours is larger). An update that runs
past the timeout rolls back, so a timeout below its parts turns a slow but healthy deploy into a rollback.
"""

from __future__ import annotations

import math

from config.schema import EnvironmentConfig
from config.sections import is_none

UNSET_PROVISION_SECONDS = 3600  # botocore ProductionVariant.VariantInstanceProvisionTimeoutInSeconds: 300-3600
IMAGE_PULL_MARGIN_SECONDS = 900
API_MAXIMUM_SECONDS = 28800  # BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds: 600-28800


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


def timeout_parts(cfg: EnvironmentConfig) -> list[tuple[str, int]]:
    """(what, seconds) of the longest update, the margin last."""
    d, startup = cfg.deployment, cfg.container.startup_health_check_timeout_seconds
    provision = max(v.instance_provision_timeout_seconds or UNSET_PROVISION_SECONDS for v in cfg.variants)
    steps = steps_to_full_traffic(cfg)
    return [
        ("provisioning timeout", provision),
        ("model download", startup),
        ("container start", startup),
        (f"{steps} x {d.wait_interval_seconds} s bake", steps * d.wait_interval_seconds),
        ("termination wait", d.termination_wait_seconds),
        ("image pull margin", IMAGE_PULL_MARGIN_SECONDS),
    ]


def parts_seconds(cfg: EnvironmentConfig) -> int:
    return sum(seconds for _, seconds in timeout_parts(cfg))


def describe_parts(cfg: EnvironmentConfig) -> str:
    return " + ".join(f"{what} {seconds} s" for what, seconds in timeout_parts(cfg))


def execution_timeout(cfg: EnvironmentConfig) -> int:
    """deployment.maximum_execution_timeout_seconds, or its parts rounded up to the minute (the API's cap)."""
    explicit = cfg.deployment.maximum_execution_timeout_seconds
    if explicit is not None:
        return explicit
    return min(API_MAXIMUM_SECONDS, math.ceil(parts_seconds(cfg) / 60) * 60)
