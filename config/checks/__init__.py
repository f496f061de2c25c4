"""Rules that relate several fields, or a field to the catalog. Each returns every problem found.

A problem is (field path, message); the message names the bad value and what is allowed, and the
path follows config.problems (`variants[1].image_tag`, `autoscaling.primary.schedules[4].start`).
The rules live in modules by subject (identity, variants, engine, vram_budget, container,
deployment, scaling, platform, prices, capacity, deployed, capture, alerting, routing); this module
holds only the order they run in.

Adding a check: write `def check_x(cfg: EnvironmentConfig, ...) -> list[Problem]` in the module of
its subject (a new subject gets a module of its own) as if the config were valid, and add it to the
list in `check_environment`. It runs on every config whose fields it reads are valid: a field that
failed validation is INVALID (config.sections), and a check that touches one raises InvalidInput and
is skipped, since that field is already reported. Inside a loop over items (variants, schedules),
wrap the per-item part in `skip_invalid` so one bad item does not skip the others. Test optional
fields with `is_none(x)`, not `x is None` (which cannot see INVALID).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from config.blue_green_timeout import steps_to_full_traffic
from config.checks.alerting import check_alerting, check_ceiling_after_scale_out
from config.checks.capacity import check_capacity_within_ceiling, check_target_within_capacity
from config.checks.capture import check_data_capture
from config.checks.container import (
    check_admission_deadline,
    check_startup_timeout,
    check_unhealthy_exit,
    check_warmup,
)
from config.checks.deployed import check_deployed
from config.checks.deployment import check_deployment, check_production_bake
from config.checks.engine import check_engine, check_vllm_startup
from config.checks.identity import check_identity, check_region, known_regions
from config.checks.platform import check_blue_green_steps, check_inference_amis, check_instance_quotas
from config.checks.prices import check_prices
from config.checks.routing import check_routing
from config.checks.scaling import check_autoscaling
from config.checks.variants import check_variants
from config.checks.vram_budget import check_vram_budget, kv_cache_budget
from config.deployed import Deployed
from config.gpu_memory import check_gpu_memory_alarm
from config.problems import Problem
from config.schema import Catalog, EnvironmentConfig
from config.sections import INVALID, InvalidInput, skip_invalid

__all__ = [
    "INVALID",
    "check_environment",
    "known_regions",
    "kv_cache_budget",
    "skip_invalid",
    "steps_to_full_traffic",
]


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
        ((), lambda: check_identity(cfg, env_name)),
        (("region",), lambda: check_region(cfg)),
        (("variants",), lambda: check_variants(cfg, catalog)),
        (("engine",), lambda: check_engine(cfg, catalog)),
        (("engine",), lambda: check_vllm_startup(cfg.engine)),
        (("engine", "variants"), lambda: check_vram_budget(cfg, catalog)),
        (("engine", "container"), lambda: check_startup_timeout(cfg, catalog)),
        (("container",), lambda: check_warmup(cfg)),
        (("container",), lambda: check_unhealthy_exit(cfg)),
        (("container", "alarms"), lambda: check_admission_deadline(cfg)),
        (("deployment",), lambda: check_deployment(cfg)),
        (("deployment", "production"), lambda: check_production_bake(cfg)),
        (("autoscaling", "variants"), lambda: check_autoscaling(cfg)),
        (("autoscaling", "variants"), lambda: check_deployed(cfg, deployed)),
        (("autoscaling", "variants", "planning"), lambda: check_target_within_capacity(cfg, catalog)),
        (("planning", "engine"), lambda: check_capacity_within_ceiling(cfg, catalog)),
        (("variants",), lambda: check_inference_amis(cfg, catalog)),
        (("region", "variants"), lambda: check_prices(cfg, catalog, env_name)),
        (("deployment", "variants", "autoscaling"), lambda: check_blue_green_steps(cfg)),
        (("variants", "autoscaling", "endpoint_instance_quotas"), lambda: check_instance_quotas(cfg, catalog)),
        (("routing_strategy", "prefix_aware_routing", "variants", "planning"), lambda: check_routing(cfg, catalog)),
        (("data_capture", "production"), lambda: check_data_capture(cfg)),
        (("alarms",), lambda: check_alerting(cfg, env_name)),
        (("alarms", "engine", "variants"), lambda: check_gpu_memory_alarm(cfg, catalog)),
        (("alarms", "planning"), lambda: check_ceiling_after_scale_out(cfg)),
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
