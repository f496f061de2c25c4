"""A plan: the configured scaling, reactive policies alone, static fleets (at max_capacity, at the
week's peak) and the oracle, side by side, with the budget the verdict judges them by."""

from __future__ import annotations

import math

from config.checks.capacity import measured_capacity_warnings
from config.schema import Catalog, EnvironmentConfig
from container.serving import contract
from planner.autoscaling import (
    TRACKING_SCALE_IN_FRACTION,
    TRACKING_SCALE_IN_MINUTES,
    TRACKING_SCALE_OUT_MINUTES_DEFAULT,
    StepScalingPolicy,
    TargetTrackingPolicy,
)
from planner.baselines import oracle, static_for_peak
from planner.calendar import peak_minutes, scheduled_actions
from planner.fleet import VariantModel
from planner.results import Plan
from planner.simulate import simulate
from planner.totals import add_totals
from planner.traffic import TrafficProfile

MODELLED_STEP_METRICS = (contract.METRIC_QUEUE_DEPTH, contract.METRIC_RUNNING_SEQUENCES)
STATIC_MAX_TITLE = "Static fleet at max_capacity"


class PlanError(ValueError):
    """The config asks for something the planner cannot model; the message names the field."""


def build_plan(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> Plan:
    demand, start = list(traffic.requests_per_minute), traffic.start

    def models(with_schedules: bool) -> list[VariantModel]:
        return variant_models(cfg, traffic, with_schedules=with_schedules)

    timing = {"provisioning_minutes": cfg.planning.provisioning_minutes,
              "timeout_seconds": cfg.planning.request_timeout_seconds}  # fmt: skip
    configured = models(True)
    scheduled = {m.name: peak_minutes(m.actions, len(demand)) for m in configured}
    scenarios = [
        simulate(configured, demand, start, key="configured", title="Configured: schedules + policies", **timing),
        simulate(models(False), demand, start, key="reactive", title="Reactive policies only", **timing),
        simulate(_fixed_at_max(models(False)), demand, start, key="static-max", title=STATIC_MAX_TITLE, **timing),
        static_for_peak(models(False), demand, start),
        oracle(models(False), demand, start),
    ]
    plan = Plan(
        env=cfg.name,
        traffic_name=traffic.name,
        scenarios={s.key: s for s in scenarios},
        assumptions=assumptions(cfg, catalog, traffic),
        traffic_events=[(e.name, e.start_minute, e.end_minute) for e in traffic.events],
        peak_windows=[(p.name, p.start_minute, p.end_minute) for p in traffic.peaks],
        time_zones=list(traffic.zones),
        budget=cfg.planning.budget,
        warnings=measured_capacity_warnings(cfg) + ceiling_warnings(cfg, configured, demand),
    )
    prices = {v.name: catalog.instance_types[v.instance_type].on_demand_usd_per_hour for v in cfg.variants}
    in_peaks = plan.peak_mask(len(demand))
    for scenario in scenarios:
        for name, series in scenario.variants.items():
            series.in_scheduled_peak = scheduled[name]
        add_totals(scenario, prices, in_peaks)
    return plan


def _fixed_at_max(models: list[VariantModel]) -> list[VariantModel]:
    """Every variant at its ceiling all week, no policies: what max_capacity can carry at best."""
    for model in models:
        model.policies, model.actions, model.min_capacity = [], [], model.max_capacity
    return models


def ceiling_warnings(cfg: EnvironmentConfig, models: list[VariantModel], demand: list[float]) -> list[str]:
    """Variants whose ceiling is below what the traffic's busiest minute needs."""
    warnings = []
    for model in models:
        peak = max(demand) * model.share
        needed = math.ceil(peak / model.capacity.requests_per_minute)
        if needed > model.max_capacity:
            field = (
                f"autoscaling.{model.name}.max_capacity"
                if model.name in cfg.autoscaling
                else f"variants.{model.name}.initial_instance_count"
            )
            warnings.append(
                f"{field} {model.max_capacity} serves {model.max_capacity * model.capacity.requests_per_minute:,.0f}"
                f" requests/min; the traffic's busiest minute sends {model.name} {peak:,.0f}/min ({needed} instances)"
            )
    return warnings


def variant_models(cfg: EnvironmentConfig, traffic: TrafficProfile, *, with_schedules: bool) -> list[VariantModel]:
    """Fresh models (policies keep alarm state, so every simulation gets its own)."""
    total_weight = sum(v.initial_weight for v in cfg.variants)
    models = []
    for variant in cfg.variants:
        capacity = cfg.planning.capacity.get(variant.instance_type)
        if capacity is None:
            raise PlanError(
                f"planning.capacity has no entry for {variant.instance_type} (variants.{variant.name}.instance_type); "
                f"known: {', '.join(sorted(cfg.planning.capacity))}"
            )
        model = VariantModel(
            name=variant.name,
            share=variant.initial_weight / total_weight,
            capacity=capacity,
            max_num_seqs=cfg.engine.max_num_seqs,
            min_capacity=variant.initial_instance_count,
            max_capacity=variant.initial_instance_count,
        )
        scaling = cfg.autoscaling.get(variant.name)
        if scaling is not None:
            model.min_capacity, model.max_capacity = scaling.min_capacity, scaling.max_capacity
            model.policies = [TargetTrackingPolicy(scaling.target_tracking)]
            for i, step in enumerate(scaling.step_scaling):
                if step.metric not in MODELLED_STEP_METRICS:
                    raise PlanError(
                        f"autoscaling.{variant.name}.step_scaling[{i}].metric: the planner models "
                        f"{' and '.join(MODELLED_STEP_METRICS)}, got '{step.metric}'"
                    )
                model.policies.append(StepScalingPolicy(step))
            if with_schedules:
                model.actions = scheduled_actions(scaling, traffic.start, len(traffic.requests_per_minute))
        models.append(model)
    return models


def assumptions(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> dict[str, str]:
    planning = cfg.planning
    lines = {
        "traffic": f"{traffic.name}; peak windows {_peak_kinds(traffic)} (from the traffic, not the config)",
    }
    lines |= {
        f"capacity per {name}": f"{c.requests_per_minute:,.0f} requests/min at the SLO, {c.concurrent_sequences} "
        f"sequences; {c.provenance()}"
        for name, c in sorted(planning.capacity.items())
    }
    total_weight = sum(v.initial_weight for v in cfg.variants)
    budget = planning.budget
    lines |= {
        "traffic split": ", ".join(f"{v.name} {v.initial_weight / total_weight:.0%}" for v in cfg.variants),
        "provisioning delay": f"{planning.provisioning_minutes} min from scale-out to in service; "
        "one capacity change at a time per endpoint",
        "request timeout": f"{planning.request_timeout_seconds} s: requests queued longer fail",
        "target tracking alarms": f"scale out after {TRACKING_SCALE_OUT_MINUTES_DEFAULT} min above target "
        f"(1 min for the high-resolution metric), scale in after {TRACKING_SCALE_IN_MINUTES} min "
        f"below {TRACKING_SCALE_IN_FRACTION:.0%} of it",
        "prices": ", ".join(
            f"{t} ${catalog.instance_types[t].on_demand_usd_per_hour}/h"
            for t in sorted({v.instance_type for v in cfg.variants})
        )
        + " on demand (config/catalog.yaml); month = 730 h",
        "budget (planning.budget)": f"rejected ≤ {budget.rejected_percent:g} % in the worst 24 h, "
        f"shortfall ≤ {budget.shortfall_minutes_in_peaks} min in peak windows and "
        f"≤ {budget.shortfall_minutes_per_week} min a week in all, cost ≤ {budget.cost_vs_oracle:.2f}x the oracle",
    }
    return lines


def _peak_kinds(traffic: TrafficProfile) -> str:
    names = list(dict.fromkeys(p.name for p in traffic.peaks))
    return ", ".join(names) if names else "none"
