"""Warnings (never refusals) about a measured `planning.capacity` figure: the config still synthesises,
but a reader of `make synth` and `make plan` learns the figure may not fit any more."""

from __future__ import annotations

from config.schema import EnvironmentConfig

HIGH_RESOLUTION = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
TARGET_SHARE_OF_MEASURED = 0.85  # above this, a burst queues before target tracking has scaled out


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
