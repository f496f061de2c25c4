"""The capacity-ceiling alarm replayed on a simulated week: when it would raise its ticket.

A minute breaches when the load target tracking tracks, per instance, is above `ceiling`; with
`pinned`, only while target tracking is also at its maximum with all of it in service (the capacity
watch's InstancesBelowMax and InstancesShort both 0), as constructs/serving_alarms.py builds the alarm
now. The alarm goes to ALARM when `capacity_ceiling_minutes` breaching minutes come in a row; each
such minute is returned.
"""

from __future__ import annotations

from config.metric_names import HIGH_RESOLUTION
from config.scaling_target import ceiling_load, tracking_target
from config.schema import EnvironmentConfig
from workbench.planner.results import VariantSeries

FORMER_PERCENT_OF_TARGET = 130  # the alarm before issue 39: 130 % of the policy's target, load alone


def firings(cfg: EnvironmentConfig, series: VariantSeries, metric: str, ceiling: float, *, pinned: bool) -> list[int]:
    loads = series.concurrency_per_instance if metric == HIGH_RESOLUTION else series.invocations_per_instance
    fired, run = [], 0
    for minute, load in enumerate(loads):
        breaching = load > ceiling and (series.at_max[minute] or not pinned)
        run = run + 1 if breaching else 0
        if run == cfg.alarms.capacity_ceiling_minutes:
            fired.append(minute)
    return fired


def current_firings(cfg: EnvironmentConfig, variant: str, series: VariantSeries) -> list[int]:
    """The alarm as built now: above planning.capacity while pinned at the maximum."""
    found = ceiling_load(cfg, variant)
    return [] if found is None else firings(cfg, series, found[0], found[1], pinned=True)


def former_firings(cfg: EnvironmentConfig, variant: str, series: VariantSeries) -> list[int]:
    """The alarm as it was: above 130 % of the scaling target, whatever the fleet's range."""
    metric = cfg.autoscaling[variant].target_tracking.metric
    ceiling = tracking_target(cfg, variant) * FORMER_PERCENT_OF_TARGET / 100
    return firings(cfg, series, metric, ceiling, pinned=False)
