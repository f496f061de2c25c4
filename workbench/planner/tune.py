"""`bin/plan ENV --tune`: search the scaling config for the cheapest configurations meeting planning.budget.

The search space (SEARCH_SPACE_VERSION in workbench/planner/frontier.py names it: bump it when this changes):
- the target share of concurrency (every high-resolution target-tracking policy): SHARES;
- each scheduled window's floor, as FLOOR_FACTORS x its forecast floor (the window's busiest minute at
  100 % of the preferred type's capacity), never below the variant's min_capacity, and its maximum, as MAX_FACTORS x its floor, never below the
  1.2 x rule (config/checks/scaling.py) nor above the variant's max_capacity;
- the floor (min_capacity) of every variant but the first (the canary): CANARY_FLOORS;
- the pre-scale lead time: every window's start moved by LEAD_SHIFTS minutes.
Coordinate descent from the configured point, the canary's floor first, then the rest in that order, each dimension tried whole while the others
hold, until a pass changes nothing (at most MAX_PASSES): deterministic, ties to the earlier candidate.
A point meets the budget when every check but cost does (planner.verdict); the cheapest such point is
the frontier's cost. Every evaluated point is kept for the frontier table and plot (cost against failed
requests in the worst hour).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from config.schema import MAX_INSTANCES, Catalog, EnvironmentConfig
from workbench.planner.build import limits, stress_rows, totals, variant_models
from workbench.planner.calendar import scheduled_actions
from workbench.planner.results import Plan, Scenario
from workbench.planner.simulate import simulate
from workbench.planner.stress import Stress, stress_set, stressed_demand
from workbench.planner.traffic import TrafficProfile
from workbench.planner.verdict import judge

# Down to 0.3: under the stress set (8 min provisioning, capacity −20 %) target tracking needs more room.
SHARES = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
FLOOR_FACTORS = (0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.4)  # above 1: a window's floor at capacity −20 %
MAX_FACTORS = (1.2, 1.4, 1.6)
WINDOW_MAX_RULE = 1.2  # config/checks/scaling.py: a window's max_capacity >= 1.2 x its floor
CANARY_FLOORS = (1, 2, 3, 4)  # at 132/min an instance the canary's 5 % of the spike needs more than 2
LEAD_SHIFTS = (-15, 0, 15)
MAX_PASSES = 4
CRON = re.compile(r"^cron\((\d+) (\d+) (.*)\)$")


@dataclass(frozen=True)
class Point:
    share: float | None  # target_share_of_concurrency; None: the config uses target_value
    windows: tuple[tuple[int, int], ...]  # (min_capacity, max_capacity) of each window, variants in order
    floors: tuple[int, ...]  # min_capacity of each autoscaled variant but the first
    shift: int = 0  # minutes added to every window's start
    maxima: tuple[int, ...] = ()  # max_capacity of each autoscaled variant, at least; (): as configured


@dataclass(frozen=True)
class Outcome:
    point: Point
    monthly_cost_usd: float
    failed_in_peaks: float
    failed_worst_hour: float
    failed_worst_hour_percent: float
    meets: bool  # every budget check but cost (and, in the stress phase, every stress scenario)
    stress_failed: float = 0.0  # failed requests in the stress scenarios evaluated (up to the first failing)
    bare_meets: bool | None = None  # every budget check but cost at the bare assumptions; None: as `meets`


@dataclass
class Search:
    chosen: Outcome  # the cheapest holding the stress set (or the bare one when there is no stress set)
    start: Outcome
    evaluated: list[Outcome]
    bare: Outcome | None = None  # the cheapest at the bare assumptions alone: what the margin costs is the difference
    stressed: list[Outcome] = field(default_factory=list)  # evaluated under the stress set (its phase)

    @property
    def frontier(self) -> list[Outcome]:
        """Points no other beats on both cost and failed requests in the worst hour, among all and among those
        meeting the budget, cheapest first."""
        meeting = [o for o in (self.stressed or self.evaluated) if o.meets]  # holding the stress set, if any
        kept = {o.point: o for o in [*_pareto(self.evaluated), *_pareto(meeting)]}
        return sorted(kept.values(), key=lambda o: (o.monthly_cost_usd, o.failed_worst_hour))


def _pareto(outcomes: list[Outcome]) -> list[Outcome]:
    kept: list[Outcome] = []
    for outcome in sorted(outcomes, key=lambda o: (o.monthly_cost_usd, o.failed_worst_hour)):
        if not kept or outcome.failed_worst_hour < kept[-1].failed_worst_hour:
            kept.append(outcome)
    return kept


def configured_point(cfg: EnvironmentConfig) -> Point:
    scaled = list(cfg.autoscaling.values())
    shares = [s.target_tracking.target_share_of_concurrency for s in scaled]
    windows = tuple((w.min_capacity, w.max_capacity or s.max_capacity) for s in scaled for w in s.schedules)
    return Point(shares[0] if shares else None, windows, tuple(s.min_capacity for s in scaled[1:]))


def apply(cfg: EnvironmentConfig, point: Point) -> EnvironmentConfig | None:
    """`cfg` with `point`'s settings (not validated: the writer validates); None when a start cannot move."""
    windows, floors, autoscaling = iter(point.windows), iter(point.floors), {}
    for index, (name, scaling) in enumerate(cfg.autoscaling.items()):
        schedules = []
        for window in scaling.schedules:
            low, high = next(windows)
            start = shift_cron(window.start, point.shift)
            if start is None:
                return None
            schedules.append(window.model_copy(update={"min_capacity": low, "max_capacity": high, "start": start}))
        tracking = scaling.target_tracking
        if tracking.target_share_of_concurrency is not None and point.share is not None:
            tracking = tracking.model_copy(update={"target_share_of_concurrency": point.share})
        least = point.maxima[index] if point.maxima else 0
        highest = max([scaling.max_capacity, least, *(w.max_capacity or 0 for w in schedules)])
        update = {"schedules": schedules, "target_tracking": tracking, "max_capacity": highest}
        if index > 0:
            update["min_capacity"] = next(floors)
        autoscaling[name] = scaling.model_copy(update=update)
    return cfg.model_copy(update={"autoscaling": autoscaling})


def shift_cron(expression: str, minutes: int) -> str | None:
    """`cron(M H ...)` moved by `minutes` within its day; None when it would cross midnight."""
    if minutes == 0:
        return expression
    match = CRON.match(expression)
    if match is None:
        return None
    moved = int(match[2]) * 60 + int(match[1]) + minutes
    if not 0 <= moved < 24 * 60:
        return None
    return f"cron({moved % 60} {moved // 60} {match[3]})"


def evaluate(
    cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile, point: Point, stresses: Sequence[Stress] = ()
) -> Outcome | None:
    """The point at the bare assumptions; with `stresses`, it meets the budget only if it holds in each
    of them too (evaluated only for a point meeting it bare, stopping at the first failure)."""
    candidate = apply(cfg, point)
    if candidate is None:
        return None
    demand = list(traffic.requests_per_minute)
    models = variant_models(candidate, catalog, traffic, with_schedules=True)
    configured = simulate(
        models, demand, traffic.start, key="configured", title="tune",
        provisioning_minutes=cfg.planning.provisioning_minutes, **limits(cfg),
    )  # fmt: skip
    plan = _plan(candidate, traffic, configured)
    totals(plan, [configured], candidate, catalog)
    meets = {"peaks", "unannounced", "shortfall"} <= {check.name for check in judge(plan).checks if check.passed}
    stress_failed, bare_meets = 0.0, meets
    if meets and stresses:
        rows = stress_rows(candidate, catalog, traffic, stresses, stop_at_first_failure=True)
        meets = all(row.passed for row in rows)
        stress_failed = sum(row.failed_in_peaks + row.failed_worst_hour for row in rows)
    t = configured.total
    return Outcome(
        point,
        t.monthly_cost_usd,
        t.failed_in_peaks,
        t.failed_worst_hour,
        t.failed_worst_hour_percent,
        meets,
        stress_failed,
        bare_meets,
    )


def _plan(cfg: EnvironmentConfig, traffic: TrafficProfile, configured: Scenario) -> Plan:
    return Plan(
        env=cfg.name,
        traffic_name=traffic.name,
        scenarios={"configured": configured},
        assumptions={},
        peak_windows=[(p.name, p.start_minute, p.end_minute) for p in traffic.peaks],
        budget=cfg.planning.budget,
    )


def _rank(outcome: Outcome) -> tuple:
    """Meeting the budget first, then cheaper; then meeting it bare but failing a stress scenario, fewer of
    those failures first; short of it bare, fewer failures in peaks, then in the worst hour."""
    if outcome.meets:
        return (0, outcome.monthly_cost_usd)
    if outcome.bare_meets:
        return (1, outcome.stress_failed, 0.0, outcome.monthly_cost_usd)
    return (2, outcome.failed_in_peaks, outcome.failed_worst_hour, outcome.monthly_cost_usd)


def forecast_floors(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> list[int]:
    """Each window's busiest minute (within the run) at 100 % of its variant's preferred type's capacity."""
    floors = []
    for model in variant_models(cfg, catalog, traffic, with_schedules=False):
        scaling = cfg.autoscaling.get(model.name)
        for window in scaling.schedules if scaling else []:
            actions = [
                a
                for a in scheduled_actions(scaling, traffic.start, len(traffic.requests_per_minute))
                if a.window == window.name
            ]
            busiest = 0.0
            for opened, closed in zip(actions[::2], actions[1::2], strict=False):
                span = traffic.requests_per_minute[max(opened.minute, 0) : max(closed.minute, 0)]
                busiest = max([busiest, *span])
            floors.append(max(1, math.ceil(busiest * model.share / model.capacity.requests_per_minute)))
    return floors


def _window_candidates(
    point: Point, index: int, forecast: int, ceiling: int, lowest: int = 1, least_max: int = 0
) -> list[Point]:
    """Floors around the forecast (the maximum kept in proportion), then maxima for the present floor; no
    floor below `lowest`, the variant's own min_capacity (its redundancy floor), no maximum below
    `least_max` (what the window's fallback night needs)."""
    low, high = point.windows[index]
    options = set()
    for factor in FLOOR_FACTORS:
        floor = min(max(lowest, round(forecast * factor)), ceiling)
        options.add((floor, _window_max(floor, high / max(low, 1), ceiling, least_max)))
    for factor in MAX_FACTORS:
        options.add((low, _window_max(low, factor, ceiling, least_max)))
    return [_with_window(point, index, option) for option in sorted(options)]


def _window_max(floor: int, factor: float, ceiling: int, least: int = 0) -> int:
    rule = min(math.ceil(WINDOW_MAX_RULE * floor), ceiling)
    return max(rule, min(math.ceil(factor * floor), ceiling), floor, least)


def _with_window(point: Point, index: int, window: tuple[int, int]) -> Point:
    windows = list(point.windows)
    windows[index] = window
    return replace(point, windows=tuple(windows))


def _ceilings(cfg: EnvironmentConfig) -> list[int]:
    return [s.max_capacity for s in cfg.autoscaling.values() for _ in s.schedules]


def _dimensions(
    cfg: EnvironmentConfig, forecasts: list[int], ceilings: list[int], least: list[int], shifts: tuple[int, ...]
):
    """Each dimension: a function from the present point to its candidates (the present one among them)."""
    dims = []
    # The canary's floor first: a canary short of its share of a spike fails requests whatever the share, and
    # a descent that moved the share first can stop where no canary floor helps any more (prod at 132/min).
    for index in range(len(configured_point(cfg).floors)):
        dims.append(lambda p, i=index: [_with_floor(p, i, f) for f in sorted({*CANARY_FLOORS, p.floors[i]})])
    if configured_point(cfg).share is not None:
        dims.append(lambda p: [replace(p, share=s) for s in sorted({*SHARES, p.share})])
    lowest = [s.min_capacity for s in cfg.autoscaling.values() for _ in s.schedules]
    for index, (forecast, ceiling) in enumerate(zip(forecasts, ceilings, strict=True)):
        dims.append(
            lambda p, i=index, f=forecast, c=ceiling, m=lowest[index], x=least[index]: [
                p,
                *_window_candidates(p, i, f, c, m, x),
            ]
        )
    dims.append(lambda p: [replace(p, shift=s) for s in sorted({*shifts, p.shift})])
    return dims


def valid_shifts(cfg: EnvironmentConfig) -> tuple[int, ...]:
    """The lead shifts whose schedules config.checks.scaling accepts: an earlier start may fire with another
    window's end in the same minute (refused), which only the starts decide, so once per shift."""
    from config.checks.scaling import check_autoscaling

    point, found = configured_point(cfg), []
    for shift in LEAD_SHIFTS:
        shifted = apply(cfg, replace(point, shift=shift))
        if shifted is not None and not any("both fire at" in text for _, text in check_autoscaling(shifted)):
            found.append(shift)
    return tuple(found)


def fallback_maxima(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile) -> list[int]:
    """Each window's maximum for its fallback night: its busiest minute (within the run) served by the
    variant's weakest pool type alone, at 100 % of that type's capacity (a night without the preferred type)."""
    found = []
    for model in variant_models(cfg, catalog, traffic, with_schedules=False):
        scaling = cfg.autoscaling.get(model.name)
        weakest = min(pool.capacity.requests_per_minute for pool in model.pools)
        for window in scaling.schedules if scaling else []:
            busiest = _busiest(scaling, window.name, traffic)
            found.append(max(1, math.ceil(busiest * model.share / weakest)))
    return found


def stressed_maxima(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile, stresses) -> list[int]:
    """Each autoscaled variant's max_capacity for the stress set: its busiest minute at the capacity each
    scenario leaves (every type lower by the band; the weakest pool type alone on a fallback night; the
    preferred type with the affinity-lost GPU time), never below the configured maximum."""
    found = []
    for model in variant_models(cfg, catalog, traffic, with_schedules=False):
        scaling = cfg.autoscaling.get(model.name)
        if scaling is None:
            continue
        demand = [d * model.share for d in traffic.requests_per_minute]
        rate = model.capacity.requests_per_minute
        needs = [scaling.max_capacity]
        for stress in stresses:
            busiest = max(stressed_demand(demand, stress))
            if stress.outages:
                weakest = min(pool.capacity.requests_per_minute for pool in model.pools)
                needs.append(math.ceil(busiest / weakest))
            else:
                needs.append(math.ceil(busiest / (rate * stress.capacity_factor)))
        found.append(min(max(needs), MAX_INSTANCES))
    return found


def _per_window(cfg: EnvironmentConfig, maxima: list[int]) -> list[int]:
    """A variant's figure for each of its windows (variants in order, autoscaled ones only)."""
    return [m for m, s in zip(maxima, cfg.autoscaling.values(), strict=True) for _ in s.schedules]


def _fallback_maxima_any_shift(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile, point: Point):
    """fallback_maxima at the largest over every lead shift the search may choose: an earlier start takes
    in more of the evening before it, and the maximum must cover whichever the search writes."""
    found = [0] * len(point.windows)
    for shift in LEAD_SHIFTS:
        shifted = apply(cfg, replace(point, shift=shift))
        if shifted is not None:
            found = [max(a, b) for a, b in zip(found, fallback_maxima(shifted, catalog, traffic), strict=True)]
    return found


def _busiest(scaling, window: str, traffic: TrafficProfile) -> float:
    actions = [
        a for a in scheduled_actions(scaling, traffic.start, len(traffic.requests_per_minute)) if a.window == window
    ]
    busiest = 0.0
    for opened, closed in zip(actions[::2], actions[1::2], strict=False):
        busiest = max([busiest, *traffic.requests_per_minute[max(opened.minute, 0) : max(closed.minute, 0)]])
    return busiest


def _with_floor(point: Point, index: int, floor: int) -> Point:
    floors = list(point.floors)
    floors[index] = floor
    return replace(point, floors=tuple(floors))


def search(cfg: EnvironmentConfig, catalog: Catalog, traffic: TrafficProfile, progress=None) -> Search:
    """Coordinate descent over the documented space at the bare assumptions, then again for the cheapest
    point that also holds planning.stress's scenarios (planner.stress), every window's maximum at least what
    its fallback night needs, from the better of the bare answer and the configured point (so a re-run never
    loses what the config already holds); `progress(outcome)` is told of each new evaluation."""
    forecasts, ceilings, shifts = forecast_floors(cfg, catalog, traffic), _ceilings(cfg), valid_shifts(cfg)
    configured = configured_point(cfg)
    snapped = tuple((lo, _window_max(lo, hi / lo, c)) for (lo, hi), c in zip(configured.windows, ceilings, strict=True))
    none = [0] * len(ceilings)
    # From the configured point and from the forecast's (floors at 0.8 x it, maxima to the rule, the lead as
    # configured): the better start, so a re-run from a config tuned with margin finds the bare frontier again.
    fresh = tuple(
        (f := min(max(low, round(0.8 * forecast)), c), _window_max(f, WINDOW_MAX_RULE, c))
        for forecast, c, low in zip(forecasts, ceilings, _lowest(cfg), strict=True)
    )
    firsts = [replace(configured, windows=snapped), replace(configured, windows=fresh, share=_fresh_share(configured))]
    bare, start, seen = _descend(cfg, catalog, traffic, firsts, (forecasts, ceilings, none, shifts), (), progress)
    stresses, _ = stress_set(cfg, catalog, traffic)
    if not stresses:
        return Search(bare, start, seen, bare)
    least = _fallback_maxima_any_shift(cfg, catalog, traffic, configured)
    maxima = stressed_maxima(cfg, catalog, traffic, stresses)
    raised = [max(c, x, m) for c, x, m in zip(ceilings, least, _per_window(cfg, maxima), strict=True)]

    def lifted(point: Point) -> Point:
        windows = tuple((lo, max(hi, x)) for (lo, hi), x in zip(point.windows, least, strict=True))
        return replace(point, windows=windows, maxima=tuple(maxima))

    firsts = [lifted(bare.point), lifted(configured)]
    held, _, more = _descend(
        cfg, catalog, traffic, firsts, (forecasts, raised, least, shifts), tuple(stresses), progress
    )
    return Search(held, start, [*seen, *more], bare, more)


def _lowest(cfg: EnvironmentConfig) -> list[int]:
    return [s.min_capacity for s in cfg.autoscaling.values() for _ in s.schedules]


def _fresh_share(point: Point) -> float | None:
    return None if point.share is None else 0.55  # the middle of SHARES


def _descend(cfg, catalog, traffic, firsts: list[Point], bounds, stresses: tuple, progress):
    """(best, the first start's outcome, every outcome evaluated): coordinate descent from the best of `firsts`."""
    seen: dict[Point, Outcome | None] = {}

    def outcome_of(point: Point) -> Outcome | None:
        if point not in seen:
            seen[point] = evaluate(cfg, catalog, traffic, point, stresses)
            if progress and seen[point]:
                progress(seen[point])
        return seen[point]

    outcomes = [found for found in map(outcome_of, firsts) if found is not None]
    start, best = outcomes[0], min(outcomes, key=_rank)
    dims = _dimensions(cfg, *bounds)
    for _ in range(MAX_PASSES):
        before = best.point
        for candidates in dims:
            for point in candidates(best.point):
                found = outcome_of(point)
                if found is not None and _rank(found) < _rank(best):
                    best = found
        if best.point == before:
            break
    return best, start, [o for o in seen.values() if o is not None]
