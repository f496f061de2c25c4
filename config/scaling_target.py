"""The target a variant's target-tracking policy tracks, explicit or derived from `planning.capacity`.

With `target_share_of_concurrency` (high-resolution metric only) the target is that share of
`planning.capacity.<type>.concurrent_sequences` of the variant's instance type that saturates first:
the lowest figure among `variants[].instance_types` (the preferred type and its fallback pools) that
have one. A measured capacity (`bin/loadtest --write-config`) therefore moves the target at the next
synth, and the planner and the template read the same number from here.
"""

from __future__ import annotations

from config.metric_names import HIGH_RESOLUTION
from config.schema import EnvironmentConfig, InstanceCapacity, Variant


def saturating_capacity(cfg: EnvironmentConfig, variant: Variant, metric: str) -> tuple[str, InstanceCapacity] | None:
    """(instance type, its figure) with the lowest limit for `metric` among the variant's types; None
    when no type has a `planning.capacity` entry. Earlier (preferred) types win a tie."""
    figures = [(t, cfg.planning.capacity[t]) for t in variant.instance_types if t in cfg.planning.capacity]
    if not figures:
        return None
    return min(figures, key=lambda pair: limit_of(pair[1], metric))


def limit_of(capacity: InstanceCapacity, metric: str) -> float:
    """What one instance serves within the SLO, in the unit of `metric`."""
    return capacity.concurrent_sequences if metric == HIGH_RESOLUTION else capacity.requests_per_minute


def tracking_target(cfg: EnvironmentConfig, variant_name: str) -> float:
    """The TargetValue of `autoscaling.<variant_name>.target_tracking`.

    Raises ValueError for a share without any capacity figure (config.checks.scaling refuses that
    config first, naming the field)."""
    tracking = cfg.autoscaling[variant_name].target_tracking
    if tracking.target_value is not None:
        return tracking.target_value
    if tracking.target_share_of_concurrency is None:
        raise ValueError(f"autoscaling.{variant_name}.target_tracking: set target_value or target_share_of_concurrency")
    found = saturating_capacity(cfg, cfg.variant(variant_name), HIGH_RESOLUTION)
    if found is None:
        raise ValueError(
            f"autoscaling.{variant_name}.target_tracking.target_share_of_concurrency: no planning.capacity figure for "
            f"{', '.join(cfg.variant(variant_name).instance_types)}"
        )
    ratio, _ = reading_ratio(found[1])
    return round(tracking.target_share_of_concurrency * found[1].concurrent_sequences * ratio, 2)


# Until a load test against a real endpoint reads ConcurrentRequestsPerModel beside its own in flight
# (workbench/loadtest/signal_reading.py), the platform is assumed to read what clients have in flight.
ASSUMED_READING_RATIO = 1.0


def reading_ratio(capacity: InstanceCapacity) -> tuple[float, str]:
    """(ratio, where from): the platform's reading of concurrency over the client's, which the target is
    multiplied by so that it scales at the load the share means."""
    measured = capacity.measured.concurrency_reading_ratio if capacity.measured else None
    if measured is None:
        return ASSUMED_READING_RATIO, f"platform reading assumed {ASSUMED_READING_RATIO:g}x the client's in flight"
    return measured, f"platform reading {measured:g}x the client's in flight, measured"


def ceiling_load(cfg: EnvironmentConfig, variant_name: str) -> tuple[str, float] | None:
    """(metric, value) above which the capacity-ceiling alarm counts a minute: `alarms.capacity_ceiling_percent`
    of what one instance of the variant's saturating type serves within the SLO, in the unit of the metric
    target tracking tracks; None without a planning.capacity figure (no alarm then)."""
    metric = cfg.autoscaling[variant_name].target_tracking.metric
    found = saturating_capacity(cfg, cfg.variant(variant_name), metric)
    if found is None:
        return None
    return metric, round(limit_of(found[1], metric) * cfg.alarms.capacity_ceiling_percent / 100, 2)


def target_provenance(cfg: EnvironmentConfig, variant_name: str) -> str:
    """'14 concurrent requests per instance (0.7 x 20 concurrent_sequences of ml.g5.xlarge, assumed)' or the explicit value."""
    tracking = cfg.autoscaling[variant_name].target_tracking
    target = tracking_target(cfg, variant_name)
    unit = "concurrent requests" if tracking.metric == HIGH_RESOLUTION else "invocations/min"
    if tracking.target_value is not None:
        return f"{target:,g} {unit} per instance (target_value)"
    instance_type, capacity = saturating_capacity(cfg, cfg.variant(variant_name), HIGH_RESOLUTION)
    basis = "measured" if capacity.measured else "assumed"
    ratio, reading = reading_ratio(capacity)
    return (
        f"{target:,g} {unit} per instance ({tracking.target_share_of_concurrency:g} x {capacity.concurrent_sequences} "
        f"concurrent_sequences of {instance_type}, {basis}, x {ratio:g}: {reading})"
    )
