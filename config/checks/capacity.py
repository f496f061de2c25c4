"""`planning.capacity` against target tracking and against physics.

Two refusals (synth stops): a target at or above what an instance serves, and an ASSUMED capacity
above its instance type's physical ceiling (config/domain/physics.py): no assumption may claim more than the
GPU can compute or read. Warnings, never refusals, about a measured figure: the config still
synthesises, but a reader of `make synth` and `make plan` learns the figure may not fit any more, or
is above the ceiling and so a suspect measurement.
"""

from __future__ import annotations

from config.checks.vram_budget import kv_context_warnings
from config.domain.calibration import assumed_capacity, assumed_share
from config.domain.physics import Ceiling, ceiling_if_known
from config.metric_names import HIGH_RESOLUTION
from config.problems import Problem, field_path, refuse
from config.scaling_target import limit_of, saturating_capacity, tracking_target
from config.schema import Catalog, EnvironmentConfig, InstanceCapacity
from config.sections import InvalidInput, is_none, skip_invalid
from config.variant_lookup import by_name

TARGET_SHARE_OF_MEASURED = 0.85  # above this, a burst queues before target tracking has scaled out


def check_target_within_capacity(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    return [problem for name in cfg.autoscaling for problem in skip_invalid(_check_target, cfg, name, catalog)]


def _check_target(cfg: EnvironmentConfig, name: str, catalog: Catalog) -> list[Problem]:
    """Target tracking adds instances only after the metric has stayed above the target for minutes
    (3 one-minute periods for SageMakerVariantInvocationsPerInstance): a target at or above what an
    instance serves scales out only once users already queue. Held to the variant's type that saturates
    first (config.scaling_target): its preferred type or a smaller fallback pool. A target derived as a
    share of the capacity stays below it by construction (the schema holds a share below 1)."""
    variant = by_name(cfg.variants, name)
    if variant is None:  # an autoscaling entry without a variant: reported by check_autoscaling
        return []
    tracking = cfg.autoscaling[name].target_tracking
    found = saturating_capacity(cfg, variant, tracking.metric)
    if found is None or is_none(tracking.target_value):  # no figure: the planner names the type
        return []
    instance_type, capacity = found
    limit = limit_of(capacity, tracking.metric)
    if tracking.target_value < limit:
        return []
    unit, what = (
        ("concurrent requests", "concurrent_sequences")
        if tracking.metric == HIGH_RESOLUTION
        else ("requests/min", "requests_per_minute")
    )
    pool = "" if instance_type == variant.instance_type else f" (a fallback pool of variant '{name}')"
    ceiling = _ceiling_if_readable(cfg, catalog, instance_type)
    return refuse(
        f"autoscaling.{name}.target_tracking.target_value",
        f"{tracking.target_value:,g} is at or above the {limit:,g} {unit} one {instance_type}{pool} serves "
        f"within the latency objective (planning.capacity.{instance_type}.{what}; "
        f"{capacity.provenance(ceiling)}): target tracking would scale out only after users queue; allowed: below "
        f"{limit:,g} (70 % of it, {0.7 * limit:,.0f}, leaves room for the minutes a scale-out takes)",
    )


def _ceiling_if_readable(cfg: EnvironmentConfig, catalog: Catalog, instance_type: str) -> Ceiling | None:
    """The ceiling for a message; None when the engine settings failed validation (reported already)."""
    try:
        return ceiling_if_known(cfg, catalog, instance_type)
    except InvalidInput:
        return None


def check_capacity_within_ceiling(cfg: EnvironmentConfig, catalog: Catalog) -> list[Problem]:
    """An assumed `planning.capacity.<type>.requests_per_minute` must not exceed the type's physical
    ceiling at 100 % utilisation (config/domain/physics.py). A measured one above it is a warning
    (`measured_capacity_warnings`): the measurement is what needs checking, not the config."""
    return [
        problem
        for instance_type, capacity in sorted(cfg.planning.capacity.items())
        for problem in skip_invalid(_check_ceiling, cfg, catalog, instance_type, capacity)
    ]


def _check_ceiling(
    cfg: EnvironmentConfig, catalog: Catalog, instance_type: str, capacity: InstanceCapacity
) -> list[Problem]:
    if not is_none(capacity.measured):
        return []
    ceiling = ceiling_if_known(cfg, catalog, instance_type)  # an unknown type: the planner names it
    if ceiling is None or capacity.requests_per_minute <= ceiling.requests_per_minute:
        return []
    share = assumed_share(catalog)
    rate, sequences = assumed_capacity(ceiling, share.share)
    return refuse(
        field_path("planning", "capacity", instance_type, "requests_per_minute"),
        f"assumed {capacity.requests_per_minute:,g} requests/min is above the physical ceiling of one "
        f"{instance_type}, {ceiling.requests_per_minute:,.0f}/min at 100 % utilisation ({ceiling.describe()}; "
        f"engine {cfg.engine.model}, config/domain/workload.yaml): no instance serves more than its GPU can compute and "
        f"read; allowed: at most {ceiling.requests_per_minute:,.0f}, e.g. {rate:,} with concurrent_sequences "
        f"{sequences} ({share.describe()}), or measure it (`bin/loadtest ENV --variant NAME --write-config`)",
    )


def measured_capacity_warnings(cfg: EnvironmentConfig, catalog: Catalog) -> list[str]:
    """What may no longer fit in a valid config: a target close to a measured capacity, a measurement
    taken with another image, one above the physical ceiling, measured sequences the KV cache cannot
    hold at the workload's p95 context."""
    return (
        _target_warnings(cfg)
        + _image_warnings(cfg)
        + _ceiling_warnings(cfg, catalog)
        + kv_context_warnings(cfg, catalog)
    )


def _target_warnings(cfg: EnvironmentConfig) -> list[str]:
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
        target = tracking_target(cfg, name)
        field = "target_value" if tracking.target_value is not None else "target (target_share_of_concurrency)"
        if target > TARGET_SHARE_OF_MEASURED * limit:
            warnings.append(
                f"{cfg.name}: autoscaling.{name}.target_tracking.{field} {target:,g} is above "
                f"{TARGET_SHARE_OF_MEASURED:.0%} of the measured {limit:,g} {unit} per {instance_type} "
                f"({capacity.provenance()})"
            )
    return warnings


def _image_warnings(cfg: EnvironmentConfig) -> list[str]:
    warnings = []
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
                f"re-measure with `bin/loadtest {cfg.name} --variant ... --write-config`"
            )
    return warnings


def _ceiling_warnings(cfg: EnvironmentConfig, catalog: Catalog) -> list[str]:
    """A measured figure above the physical ceiling: the measurement, not physics, is wrong."""
    warnings = []
    for instance_type, capacity in sorted(cfg.planning.capacity.items()):
        ceiling = ceiling_if_known(cfg, catalog, instance_type)
        if capacity.measured is None or ceiling is None or capacity.requests_per_minute <= ceiling.requests_per_minute:
            continue
        warnings.append(_suspect(cfg.name, instance_type, capacity, ceiling))
    return warnings


def _suspect(env: str, instance_type: str, capacity: InstanceCapacity, ceiling: Ceiling) -> str:
    return (
        f"{env}: planning.capacity.{instance_type} is a suspect measurement: {capacity.requests_per_minute:,g}/min "
        f"is above the {ceiling.requests_per_minute:,.0f}/min physical ceiling ({ceiling.describe()}); "
        f"{capacity.provenance()}. Check the report (shorter answers than config/domain/workload.yaml's, or a rate "
        "divided by too few instances) and re-measure before planning on it"
    )
