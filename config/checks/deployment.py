"""The blue/green deployment: a step size where routing needs one, a bake in production long enough
for the rollback alarms, and an execution timeout that covers the waits."""

from __future__ import annotations

from config.blue_green_timeout import describe_parts, parts_seconds
from config.problems import Problem, refuse
from config.schema import EnvironmentConfig
from config.sections import is_none, skip_invalid

PRODUCTION_MIN_BAKE_SECONDS = 600


def check_deployment(cfg: EnvironmentConfig) -> list[Problem]:
    return [*skip_invalid(_check_routing_step, cfg), *skip_invalid(_check_execution_timeout, cfg)]


def _check_routing_step(cfg: EnvironmentConfig) -> list[Problem]:
    d = cfg.deployment
    if d.traffic_routing not in ("CANARY", "LINEAR"):
        return []
    if is_none(d.step_size):
        return [("deployment.step_size", f"{d.traffic_routing} needs a step_size (type and value)")]
    return []  # its size against the fleet: config.checks.platform.check_blue_green_steps


def check_production_bake(cfg: EnvironmentConfig) -> list[Problem]:
    """Every routing type bakes: ALL_AT_ONCE waits WaitIntervalInSeconds with all traffic on the new
    fleet before it terminates the old one (BlueGreenUpdatePolicy), and only during that wait can a
    rollback alarm send traffic back. A zero bake in production (`production: true`) leaves the
    alarms no window."""
    d = cfg.deployment
    if cfg.production and d.wait_interval_seconds < PRODUCTION_MIN_BAKE_SECONDS:
        return refuse(
            "deployment.wait_interval_seconds",
            f"prod bakes each step at least {PRODUCTION_MIN_BAKE_SECONDS} s ({d.traffic_routing} included: the "
            f"rollback alarms act only during the bake), got {d.wait_interval_seconds}",
        )
    return []


def _check_execution_timeout(cfg: EnvironmentConfig) -> list[Problem]:
    d = cfg.deployment
    if d.maximum_execution_timeout_seconds is None:
        return []
    needed = parts_seconds(cfg)
    if d.maximum_execution_timeout_seconds < needed:
        return refuse(
            "deployment.maximum_execution_timeout_seconds",
            f"must cover the update's parts ({describe_parts(cfg)} = {needed} s): past it a healthy but slow "
            f"deploy rolls back; got {d.maximum_execution_timeout_seconds} (leave it out to derive it; allowed up to 28800)",
        )
    return []
