"""The stress set (issue 52): the scenarios a plan must hold in besides its bare assumptions, each alone.

A plan tuned to the edge of two unmeasured numbers (what an instance serves, how fast one arrives) has,
by construction, no margin. So "met" means met where the assumptions are weakest too
(planning.stress, with these defaults):
- capacity: every type's figure lower by its band: an assumed figure's, the spread of the published runs
  it is calibrated on, at least 20 % (the runs are FP16 and fixed-length, not AWQ conversations: that
  difference is not measured); a measured figure's, the measurement's error (10 %: `bin/loadtest` does not
  record one yet);
- provisioning at a high percentile: a measured p95 (`ops scaling-history` records no p90, and the p95 is
  the larger), else the seeds' 8 min or twice the cited median, whichever is larger;
- each calendar window (audiences' evenings and releases) with its variants' preferred type unavailable
  from two hours before it starts, so the pre-scale finds none either, every occurrence in the run;
- release windows with the prefix cache's affinity lost: each turn re-prefills its history, so each
  request costs the GPU what it costs without affinity. Modelled as the windows' demand x the ratio of the
  preferred type's ceilings with and without it (the same fluid queue: a request costing r x the GPU time
  is r requests); only when the routing keeps affinity at all.
A stress scenario is judged on the failed-request checks (none in peak windows, the worst hour within
the unannounced allowance); shortfall minutes and cost are judged at the bare assumptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.domain.calibration import calibrate
from config.domain.physics import keeps_conversation
from config.domain.workload import engine_budget, routed_tokens
from config.schema import CACHED_SCALE_OUT_MINUTES, SEEDS_PROVISIONING_MINUTES, Catalog, EnvironmentConfig
from workbench.planner.outages import Outage
from workbench.planner.traffic import TrafficProfile

LEAST_BAND_PERCENT = 20
MEASURED_ERROR_PERCENT = 10


class StressError(ValueError):
    """planning.stress asks for less margin than the default without saying why."""


@dataclass(frozen=True)
class Stress:
    key: str
    title: str  # "capacity −20 %"
    capacity_factor: float = 1.0
    provisioning_minutes: int | None = None  # None: planning.provisioning_minutes
    outages: tuple[Outage, ...] = ()
    demand_spans: tuple[tuple[int, int], ...] = ()  # minutes whose demand is multiplied
    demand_factor: float = 1.0


def capacity_band(cfg: EnvironmentConfig, catalog: Catalog) -> tuple[float, str]:
    """(percent, why): the widest band among the pool types' figures."""
    types = {t for v in cfg.variants for t in v.instance_types}
    if all(cfg.planning.capacity[t].measured is not None for t in types if t in cfg.planning.capacity):
        return (
            MEASURED_ERROR_PERCENT,
            f"measured figures: {MEASURED_ERROR_PERCENT} % (the measurement's error, assumed)",
        )
    within = [c.efficiency for c in calibrate(catalog) if c.measurement.within_objective]
    spread = 100 * (max(within) - min(within)) / max(within)
    band = max(LEAST_BAND_PERCENT, spread)
    return band, (
        f"assumed figures: the {len(within)} calibrating run(s) spread {spread:.0f} %, FP16 fixed-length runs, not AWQ "
        f"conversations (unmeasured): at least {LEAST_BAND_PERCENT} %"
    )


def high_provisioning(cfg: EnvironmentConfig) -> tuple[int, str]:
    measured = cfg.planning.provisioning_measured
    if measured is not None:
        return math.ceil(measured.p95_minutes), "the measured p95 (scaling-history records no p90)"
    minutes = max(SEEDS_PROVISIONING_MINUTES, 2 * CACHED_SCALE_OUT_MINUTES)
    return (
        minutes,
        f"the seeds' {SEEDS_PROVISIONING_MINUTES} min or twice the cited {CACHED_SCALE_OUT_MINUTES} min median",
    )


def affinity_ratio(cfg: EnvironmentConfig, catalog: Catalog) -> float | None:
    """GPU time of a request without the conversation's cache over with it, for the first variant's
    preferred type at its batch; None when the routing keeps no affinity to lose."""
    if not keeps_conversation(cfg):
        return None
    from config.domain.physics import ceiling, known_hardware

    instance_type = cfg.variants[0].instance_type
    capacity = cfg.planning.capacity.get(instance_type)
    if capacity is None or not known_hardware(catalog, instance_type, cfg.engine.model):
        return None
    budget = engine_budget(cfg)
    batch = capacity.concurrent_sequences
    kept = ceiling(catalog, instance_type, cfg.engine.model, batch, routed_tokens(budget, True))
    lost = ceiling(catalog, instance_type, cfg.engine.model, batch, routed_tokens(budget, False))
    return kept.requests_per_minute / lost.requests_per_minute


def stress_set(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> tuple[list[Stress], list[str]]:
    """The scenarios, and notes for the plan (what each default stands on, what is left out and why)."""
    given, notes, found = cfg.planning.stress, [], []
    band, why = capacity_band(cfg, catalog)
    percent = band if given.capacity_low_percent is None else given.capacity_low_percent
    minutes, how = high_provisioning(cfg)
    slow = minutes if given.provisioning_minutes is None else given.provisioning_minutes
    _refuse_less_without_reason(cfg, percent < band, slow < minutes)
    notes.append(f"capacity −{percent:g} % ({why if percent == band else 'planning.stress.capacity_low_percent'})")
    notes.append(f"provisioning {slow} min ({how if slow == minutes else 'planning.stress.provisioning_minutes'})")
    found.append(Stress("capacity", f"capacity −{percent:g} %", capacity_factor=1 - percent / 100))
    found.append(Stress("provisioning", f"provisioning {slow} min", provisioning_minutes=slow))
    nights = _fallback_nights(cfg, traffic, given.preferred_unavailable_hours_before)
    if not nights and given.preferred_unavailable_hours_before is not None:
        notes.append("no fallback-night scenarios: no variant has fallback_instance_types to fall back on")
    found += nights
    ratio = affinity_ratio(cfg, catalog) if given.affinity_lost_in_releases else None
    releases = {r.name for r in cfg.release_calendar.releases}
    spans = tuple((p.start_minute, p.end_minute) for p in traffic.peaks if p.name in releases)
    if ratio is not None and spans:
        found.append(Stress("affinity", f"affinity lost on release nights (x{ratio:.2f} GPU time)", demand_spans=spans,
                            demand_factor=ratio))  # fmt: skip
    elif given.affinity_lost_in_releases:
        notes.append(f"no affinity-lost scenario: {cfg.routing_strategy} keeps no conversation's cache to lose")
    if given.reason:
        notes.append(f"less margin chosen: {given.reason}")
    return found, notes


def _fallback_nights(cfg: EnvironmentConfig, traffic: TrafficProfile, hours: float | None) -> list[Stress]:
    if hours is None:
        return []
    lead = round(60 * hours)
    preferred = list(dict.fromkeys(v.instance_type for v in cfg.variants if v.fallback_instance_types))
    found = []
    for name in dict.fromkeys(p.name for p in traffic.peaks):
        outages = tuple(
            Outage(t, max(0, p.start_minute - lead), p.end_minute, f"{name} from {hours:g} h before")
            for p in traffic.peaks
            if p.name == name
            for t in preferred
        )
        if outages:
            key = "without-" + name.replace(" ", "-")
            found.append(Stress(key, f"{name} without {', '.join(preferred)} from {hours:g} h before", outages=outages))
    return found


def _refuse_less_without_reason(cfg: EnvironmentConfig, less_capacity: bool, less_provisioning: bool) -> None:
    given = cfg.planning.stress
    fields = [
        name
        for name, less in (
            ("capacity_low_percent", less_capacity),
            ("provisioning_minutes", less_provisioning),
            ("preferred_unavailable_hours_before", given.preferred_unavailable_hours_before is None
             or given.preferred_unavailable_hours_before < 2),
            ("affinity_lost_in_releases", not given.affinity_lost_in_releases),
        )
        if less
    ]  # fmt: skip
    if fields and not given.reason:
        raise StressError(
            f"planning.stress.{fields[0]}: less margin than the default needs planning.stress.reason (why the team "
            f"accepts it); asked for less in: {', '.join(fields)}"
        )


def stressed_demand(demand: list[float], stress: Stress) -> list[float]:
    if stress.demand_factor == 1 or not stress.demand_spans:
        return demand
    out = list(demand)
    for start, end in stress.demand_spans:
        out[start:end] = [d * stress.demand_factor for d in demand[start:end]]
    return out
