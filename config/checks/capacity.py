"""Target tracking against `planning.capacity`, what one instance serves within the latency objective.

One refusal: a target at or above that capacity (synth stops). Warnings, never refusals, about a
measured figure: the config still synthesises, but a reader of `make synth` and `make plan` learns
the figure may not fit any more.
"""

from __future__ import annotations

from config.metric_names import HIGH_RESOLUTION
from config.problems import Problem, refuse
from config.schema import EnvironmentConfig
from config.sections import skip_invalid
from config.variant_lookup import by_name

TARGET_SHARE_OF_MEASURED = 0.85  # above this, a burst queues before target tracking has scaled out


def check_target_within_capacity(cfg: EnvironmentConfig) -> list[Problem]:
    return [problem for name in cfg.autoscaling for problem in skip_invalid(_check_target, cfg, name)]


def _check_target(cfg: EnvironmentConfig, name: str) -> list[Problem]:
    """Target tracking adds instances only after the metric has stayed above the target for minutes
    (3 one-minute periods for SageMakerVariantInvocationsPerInstance): a target at or above what an
    instance serves scales out only once users already queue."""
    variant = by_name(cfg.variants, name)
    if variant is None:  # an autoscaling entry without a variant: reported by check_autoscaling
        return []
    capacity = cfg.planning.capacity.get(variant.instance_type)
    if capacity is None:  # an instance type without a figure: the planner names it
        return []
    tracking = cfg.autoscaling[name].target_tracking
    if tracking.metric == HIGH_RESOLUTION:
        limit, unit, what = capacity.concurrent_sequences, "concurrent requests", "concurrent_sequences"
    else:
        limit, unit, what = capacity.requests_per_minute, "requests/min", "requests_per_minute"
    if tracking.target_value < limit:
        return []
    return refuse(
        f"autoscaling.{name}.target_tracking.target_value",
        f"{tracking.target_value:,g} is at or above the {limit:,g} {unit} one {variant.instance_type} serves "
        f"within the latency objective (planning.capacity.{variant.instance_type}.{what}; "
        f"{capacity.provenance()}): target tracking would scale out only after users queue; allowed: below "
        f"{limit:,g} (70 % of it, {0.7 * limit:,.0f}, leaves room for the minutes a scale-out takes)",
    )


def measured_capacity_warnings(cfg: EnvironmentConfig) -> list[str]:
    warnings = []
    for name, scaling in cfg.autoscaling.items():
        instance_type = cfg.variant(name).instance_type
        capacity = cfg.planning.capacity.get(instance_type)
        if capacity is None or capacity.measured is None:
            continue
        tracking = scaling.target_tracking
        if tracking.metric == HIGH_RESOLUTION:
            limit, unit = capacity.concurrent_sequences, "concurrent requests"
        else:
            limit, unit = capacity.requests_per_minute, "requests/min"
        if tracking.target_value > TARGET_SHARE_OF_MEASURED * limit:
            warnings.append(
                f"{cfg.name}: autoscaling.{name}.target_tracking.target_value {tracking.target_value:,g} is above "
                f"{TARGET_SHARE_OF_MEASURED:.0%} of the measured {limit:,g} {unit} per {instance_type} "
                f"({capacity.provenance()})"
            )
    for instance_type, capacity in sorted(cfg.planning.capacity.items()):
        measured = capacity.measured
        if measured is None or measured.image_tag is None:
            continue
        deployed = sorted(
            {v.image_tag for v in cfg.variants if v.instance_type == instance_type} - {measured.image_tag}
        )
        if deployed:
            warnings.append(
                f"{cfg.name}: planning.capacity.{instance_type} was measured with image {measured.image_tag} "
                f"({measured.measured_at[:10]}), the environment now deploys {', '.join(deployed)}: "
                f"re-measure with `bin/ops capacity {cfg.name} --variant ... --write-config`"
            )
    return warnings
