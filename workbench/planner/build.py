"""A plan: the configured scaling, reactive policies alone, static fleets (at max_capacity, at the
week's peak) and the oracle, side by side, with the budget the verdict judges them by."""

from __future__ import annotations

import math
from collections.abc import Sequence

from config.checks.capacity import measured_capacity_warnings
from config.domain.calibration import capacity_provenance
from config.domain.prices import describe_prices, prices_for, variant_prices
from config.scaling_target import target_provenance, tracking_target
from config.schema import (
    ADMISSION_DEADLINE_TTFT_MULTIPLE,
    Catalog,
    EnvironmentConfig,
    Variant,
)
from container.serving import contract
from workbench.planner.autoscaling import (
    TRACKING_SCALE_OUT_MINUTES,
    TRACKING_SCALE_OUT_MINUTES_DEFAULT,
    StepScalingPolicy,
    TargetTrackingPolicy,
    alarm_assumptions,
)
from workbench.planner.baselines import causal, oracle, static_for_peak
from workbench.planner.calendar import peak_minutes, scheduled_actions
from workbench.planner.fleet import Pool, VariantModel
from workbench.planner.frontier import FrontierStanding, frontier_of
from workbench.planner.margin import margin_of
from workbench.planner.outages import Outage, availability, describe
from workbench.planner.results import Plan, Scenario, StressRow
from workbench.planner.simulate import simulate
from workbench.planner.stress import Stress, StressError, stress_set, stressed_demand
from workbench.planner.totals import add_totals
from workbench.planner.traffic import TrafficProfile
from workbench.planner.verdict import FAILED_CHECKS, judge

MODELLED_STEP_METRICS = (contract.METRIC_QUEUE_DEPTH, contract.METRIC_RUNNING_SEQUENCES)
STATIC_MAX_TITLE = "Static fleet at max_capacity"


class PlanError(ValueError):
    """The config asks for something the planner cannot model; the message names the field."""


def build_plan(
    cfg: EnvironmentConfig,
    catalog: Catalog,
    traffic: TrafficProfile,
    *,
    outages: Sequence[Outage] = (),
    with_margin: bool = False,
) -> Plan:
    """Every scenario of `cfg` on `traffic`; `outages`: instance types that cannot be provisioned for a while
    (`--unavailable`); `with_margin`: also bisect the margin (planner.margin: about 15 more simulations)."""
    demand, start = list(traffic.requests_per_minute), traffic.start
    available = availability(list(outages))

    def models(with_schedules: bool) -> list[VariantModel]:
        return variant_models(cfg, catalog, traffic, with_schedules=with_schedules)

    timing = {"provisioning_minutes": cfg.planning.provisioning_minutes, "available": available, **limits(cfg)}
    configured = models(True)
    scheduled = {m.name: peak_minutes(m.actions, len(demand)) for m in configured}
    scenarios = [
        simulate(configured, demand, start, key="configured", title="Configured: schedules + policies", **timing),
        simulate(models(False), demand, start, key="reactive", title="Reactive policies only", **timing),
        simulate(_fixed_at_max(models(False)), demand, start, key="static-max", title=STATIC_MAX_TITLE, **timing),
        static_for_peak(models(False), demand, start),
        oracle(models(False), demand, start, available),
        causal(models(False), demand, start, detection_minutes(cfg) + cfg.planning.provisioning_minutes, available),
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
        warnings=measured_capacity_warnings(cfg, catalog) + ceiling_warnings(cfg, configured, demand),
        outages=describe(list(outages), start, {v.name: v.instance_types for v in cfg.variants}) if outages else "",
        traffic_file=traffic.source,
    )
    frontier = frontier_of(cfg, catalog, traffic)  # once: the checks below replay the same traffic
    judged_against(plan, frontier)
    totals(plan, scenarios, cfg, catalog, scheduled)
    provisioning = cfg.planning.provisioning_minutes
    try:
        stresses, plan.stress_notes = stress_set(cfg, catalog, traffic)
    except StressError as error:
        raise PlanError(str(error)) from None
    plan.stress = stress_rows(cfg, catalog, traffic, stresses, frontier)
    if with_margin:
        rates = {t: c.requests_per_minute for t, c in cfg.planning.capacity.items() if t in _types(cfg)}
        checks = judge(plan).checks
        plan.margin = margin_of(
            {check.name for check in checks if check.passed and not check.not_judged and check.name != "stress"},
            provisioning,
            rates,
            lambda factor, minutes: checks_at(cfg, catalog, traffic, outages, factor, minutes, frontier),
            not_judged={check.name for check in checks if check.not_judged},
        )
    return plan


def judged_against(plan: Plan, frontier: FrontierStanding) -> None:
    """What the plan's cost check judges against (planner.verdict)."""
    plan.frontier_cost, plan.frontier_stale, plan.frontier_found_on = (
        frontier.monthly_cost_usd,
        frontier.stale,
        frontier.found_on,
    )
    plan.frontier_bare_cost = frontier.bare_monthly_cost_usd


def limits(cfg: EnvironmentConfig) -> dict[str, float]:
    """What ends a request's wait in a replay (planner.simulate's arguments): the request timeout, and the
    serving image's admission deadline (`container.admission_deadline_ms` or its default), past which an
    arrival is shed at once instead of joining the queue (planner.fleet)."""
    return {
        "timeout_seconds": cfg.planning.request_timeout_seconds,
        "deadline_seconds": cfg.admission_deadline_ms / 1000,
    }


def allowed_wait(cfg: EnvironmentConfig) -> float:
    """Queue wait in seconds past which a request fails: planning.budget.max_queue_wait_seconds, else the
    whole TTFT objective (alarms.ttft_p95_ms), as if serving took none of it."""
    budget = cfg.planning.budget
    return budget.max_queue_wait_seconds if budget.max_queue_wait_seconds is not None else cfg.alarms.ttft_p95_ms / 1000


def detection_minutes(cfg: EnvironmentConfig) -> int:
    """Minutes before the slowest configured target-tracking alarm acts on a breach (planner.autoscaling)."""
    metrics = [s.target_tracking.metric for s in cfg.autoscaling.values()]
    return max((TRACKING_SCALE_OUT_MINUTES.get(m, TRACKING_SCALE_OUT_MINUTES_DEFAULT) for m in metrics), default=0)


def _types(cfg: EnvironmentConfig) -> list[str]:
    return list(dict.fromkeys(t for v in cfg.variants for t in v.instance_types))


def totals(plan: Plan, scenarios: list[Scenario], cfg: EnvironmentConfig, catalog: Catalog, scheduled=None) -> None:
    prices = variant_prices(cfg, catalog)
    in_peaks = plan.peak_mask(scenarios[0].minutes)
    for scenario in scenarios:
        for name, series in scenario.variants.items():
            series.in_scheduled_peak = (scheduled or {}).get(name, [])
        add_totals(scenario, prices, in_peaks, allowed_wait(cfg))


def checks_at(
    cfg: EnvironmentConfig,
    catalog: Catalog,
    traffic: TrafficProfile,
    outages: Sequence[Outage],
    capacity_factor: float,
    provisioning_minutes: int,
    frontier: FrontierStanding | None = None,
) -> set[str]:
    """The checks the configured fleet meets with every type's capacity x `capacity_factor` (the targets as
    configured: the template keeps them) and this provisioning delay; `frontier`: frontier_of's answer for
    this traffic, when the caller has it (it reads planning.traffic to tell stale from other traffic)."""
    plan = configured_at(cfg, catalog, traffic, outages, capacity_factor, provisioning_minutes, frontier)
    return {check.name for check in judge(plan).checks if check.passed}


def configured_at(
    cfg: EnvironmentConfig,
    catalog: Catalog,
    traffic: TrafficProfile,
    outages: Sequence[Outage],
    capacity_factor: float,
    provisioning_minutes: int,
    frontier: FrontierStanding | None = None,
    demand: list[float] | None = None,
) -> Plan:
    """The configured scenario alone under these conditions, with its totals; `demand`: the traffic's
    minutes changed (planner.stress), else the traffic's own."""
    demand, start = demand or list(traffic.requests_per_minute), traffic.start
    available = availability(list(outages))
    models = variant_models(cfg, catalog, traffic, with_schedules=True, capacity_factor=capacity_factor)
    configured = simulate(
        models, demand, start, key="configured", title="margin", provisioning_minutes=provisioning_minutes,
        available=available, **limits(cfg),
    )  # fmt: skip
    plan = Plan(
        env=cfg.name,
        traffic_name=traffic.name,
        scenarios={"configured": configured},
        assumptions={},
        peak_windows=[(p.name, p.start_minute, p.end_minute) for p in traffic.peaks],
        budget=cfg.planning.budget,
    )
    judged_against(plan, frontier or frontier_of(cfg, catalog, traffic))
    totals(plan, [configured], cfg, catalog)
    return plan


def stress_rows(
    cfg: EnvironmentConfig,
    catalog: Catalog,
    traffic: TrafficProfile,
    stresses: Sequence[Stress],
    frontier: FrontierStanding | None = None,
    *,
    stop_at_first_failure: bool = False,
) -> list[StressRow]:
    """Each stress scenario alone (planner.stress), on top of no other outage; `stop_at_first_failure`:
    the tuner's shortcut, a point failing one is out."""
    rows = []
    for stress in stresses:
        minutes = stress.provisioning_minutes or cfg.planning.provisioning_minutes
        demand = stressed_demand(list(traffic.requests_per_minute), stress)
        plan = configured_at(cfg, catalog, traffic, stress.outages, stress.capacity_factor, minutes, frontier, demand)
        met = {check.name for check in judge(plan).checks if check.passed}
        t = plan.scenarios["configured"].total
        rows.append(
            StressRow(
                stress.key, stress.title, met >= FAILED_CHECKS, t.failed_requests, t.failed_in_peaks,
                t.failed_worst_hour, t.failed_worst_hour_percent, t.monthly_cost_usd,
            )
        )  # fmt: skip
        if stop_at_first_failure and not rows[-1].passed:
            break
    return rows


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


def variant_models(
    cfg: EnvironmentConfig,
    catalog: Catalog,
    traffic: TrafficProfile,
    *,
    with_schedules: bool,
    capacity_factor: float = 1.0,
) -> list[VariantModel]:
    """Fresh models (policies keep alarm state, so every simulation gets its own); `capacity_factor` scales
    every pool's requests_per_minute and concurrent_sequences (planner.margin), never the targets."""
    total_weight = sum(v.initial_weight for v in cfg.variants)
    models = []
    for variant in cfg.variants:
        pools = [_pool(cfg, catalog, variant, t, capacity_factor) for t in variant.instance_types]
        model = VariantModel(
            name=variant.name,
            share=variant.initial_weight / total_weight,
            capacity=pools[0].capacity,
            max_num_seqs=cfg.engine.max_num_seqs,
            min_capacity=variant.initial_instance_count,
            max_capacity=variant.initial_instance_count,
            instance_type=pools[0].instance_type,
            usd_per_hour=pools[0].usd_per_hour,
            fallbacks=pools[1:],
        )
        scaling = cfg.autoscaling.get(variant.name)
        if scaling is not None:
            model.min_capacity, model.max_capacity = scaling.min_capacity, scaling.max_capacity
            model.policies = [TargetTrackingPolicy(scaling.target_tracking, tracking_target(cfg, variant.name))]
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


def _pool(cfg: EnvironmentConfig, catalog: Catalog, variant: Variant, instance_type: str, factor: float) -> Pool:
    capacity = cfg.planning.capacity.get(instance_type)
    if capacity is None:
        role = "instance_type" if instance_type == variant.instance_type else "fallback_instance_types"
        raise PlanError(
            f"planning.capacity has no entry for {instance_type} (variants.{variant.name}.{role}); "
            f"known: {', '.join(sorted(cfg.planning.capacity))}"
        )
    if factor != 1:
        scaled = {
            "requests_per_minute": capacity.requests_per_minute * factor,
            "concurrent_sequences": capacity.concurrent_sequences * factor,
        }
        capacity = capacity.model_copy(update=scaled)
    return Pool(instance_type, capacity, prices_for(cfg, catalog).usd_per_hour(instance_type))


def assumptions(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> dict[str, str]:
    planning = cfg.planning
    lines = {
        "traffic": f"{traffic.name}; peak windows {_peak_kinds(traffic)} (release_calendar, not the schedules)",
    }
    lines |= {
        f"capacity per {name}": f"{c.requests_per_minute:,.0f} requests/min at the SLO, {c.concurrent_sequences} "
        f"sequences; {capacity_provenance(cfg, catalog, name)}"
        for name, c in sorted(planning.capacity.items())
    }
    total_weight = sum(v.initial_weight for v in cfg.variants)
    budget = planning.budget
    lines |= {
        "traffic split": ", ".join(f"{v.name} {v.initial_weight / total_weight:.0%}" for v in cfg.variants),
        "provisioning delay": f"{planning.provisioning_minutes} min from scale-out to in service "
        f"({planning.provisioning_provenance()}); one capacity change at a time per endpoint",
        "request timeout": f"{planning.request_timeout_seconds} s: admitted requests queued longer fail",
        "admission deadline": f"{cfg.admission_deadline_ms / 1000:g} s ({_deadline_source(cfg)}): an arrival whose "
        "queue wait would pass it is shed at once (429), fails, and delays nobody; the serving image adds its "
        "first-token time to the wait, so it sheds a little sooner than planned; shed requests are not retried "
        "(the gateway falls back to another model)",
        "target tracking": "; ".join(
            f"{name} {scaling.target_tracking.metric} at {target_provenance(cfg, name)}"
            for name, scaling in cfg.autoscaling.items()
        )
        or "none",
        "target tracking alarms": alarm_assumptions(),
        "prices": f"{describe_prices(cfg, catalog)}; month = 730 h",
        **_pool_assumption(cfg),
        "budget (planning.budget)": f"a request fails when shed, rejected or queued over {allowed_wait(cfg):g} s "
        f"({_wait_source(cfg)}); failed ≤ {budget.failed_in_peaks} in peak windows; failed ≤ "
        f"{budget.unannounced_failed_percent:g} % of the worst hour ({budget.unannounced_reason}); shortfall ≤ "
        f"{budget.shortfall_minutes_per_week} min a week in all; cost ≤ {budget.cost_vs_frontier:.2f}x the frontier "
        f"({_frontier_line(cfg)})",
    }
    return lines


def _deadline_source(cfg: EnvironmentConfig) -> str:
    if cfg.container.admission_deadline_ms is not None:
        return "container.admission_deadline_ms"
    return f"container.admission_deadline_ms unset: {ADMISSION_DEADLINE_TTFT_MULTIPLE} x alarms.ttft_p95_ms"


def _wait_source(cfg: EnvironmentConfig) -> str:
    budget = cfg.planning.budget
    if budget.max_queue_wait_seconds is not None:
        return f"planning.budget.max_queue_wait_seconds: {budget.max_queue_wait_reason}"
    return f"the whole TTFT objective, alarms.ttft_p95_ms {cfg.alarms.ttft_p95_ms} ms"


def _frontier_line(cfg: EnvironmentConfig) -> str:
    frontier = cfg.planning.frontier
    if frontier is None:
        return "planning.frontier: none yet"
    return f"planning.frontier ${frontier.monthly_cost_usd:,.0f}/month, tuned {frontier.tuned_at[:10]}"


def _pool_assumption(cfg: EnvironmentConfig) -> dict[str, str]:
    if not any(v.fallback_instance_types for v in cfg.variants):
        return {}
    pools = "; ".join(f"{v.name} {' → '.join(v.instance_types)}" for v in cfg.variants)
    return {
        "instance pools": f"{pools}: new instances from the first type that can be provisioned, fallbacks "
        "released first (SageMaker guide, realtime-endpoints-heterogeneous); an insufficient-capacity error is "
        "assumed to surface at once and a fallback instance to take the same provisioning delay (undocumented)"
    }


def _peak_kinds(traffic: TrafficProfile) -> str:
    names = list(dict.fromkeys(p.name for p in traffic.peaks))
    return ", ".join(names) if names else "none"
