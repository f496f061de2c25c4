"""What a simulation produces: per-minute series per variant, the events that explain them, totals.

The renderers (summary.py, plot.py) read only these types, so a scenario computed any way
(simulated policies, a static fleet, the oracle) is reported the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from config.schema import PlanBudget


@dataclass(frozen=True)
class Event:
    """Something that changed capacity or explains a change, at a minute of the run."""

    minute: int
    variant: str
    kind: str  # "schedule" | "alarm" | "scale"
    text: str  # e.g. "tokyo-evening-peak start: min 6", "QueueDepth scale-out alarm", "desired 4 -> 6"


@dataclass
class VariantSeries:
    """One variant's minute-by-minute run. All lists have one entry per minute of the traffic."""

    name: str
    demand: list[float] = field(default_factory=list)  # requests arriving at the variant
    in_service: list[int] = field(default_factory=list)  # instances serving
    billed: list[int] = field(default_factory=list)  # in service + provisioning (billed from launch)
    # What those instances cost per hour, by their types' prices; empty: the variant's one price (add_totals).
    billed_usd_per_hour: list[float] = field(default_factory=list)
    capacity: list[float] = field(default_factory=list)  # requests the in-service instances can serve at the SLO
    backlog: list[float] = field(default_factory=list)  # requests still waiting at the end of the minute
    # Arrivals answered 429 at once: their queue wait would have passed the admission deadline (planner.fleet).
    shed: list[float] = field(default_factory=list)
    rejected: list[float] = field(default_factory=list)  # admitted requests that would have waited past the timeout
    wait_seconds: list[float] = field(default_factory=list)  # queue wait of the minute's admitted arrivals
    # The config's own window raising min_capacity is active: drawn, never judged (see Plan.peak_windows).
    in_scheduled_peak: list[bool] = field(default_factory=list)
    # The capacity-ceiling alarm's inputs (planner.ceiling_replay): the tracked loads per instance, and
    # whether target tracking was pinned at the maximum (desired >= the window's max_capacity, all in service).
    concurrency_per_instance: list[float] = field(default_factory=list)
    invocations_per_instance: list[float] = field(default_factory=list)
    at_max: list[bool] = field(default_factory=list)


@dataclass(frozen=True)
class Totals:
    """Figures for a variant or the whole endpoint over the run, with cost scaled to a month."""

    instance_hours: float
    monthly_cost_usd: float
    shortfall_minutes: int  # minutes whose demand (with backlog) exceeded capacity
    shortfall_minutes_in_peaks: int  # of those, minutes inside a peak window of the traffic
    delayed_requests: float  # arrivals that waited in a queue
    rejected_requests: float  # admitted requests that would have waited past the timeout
    wait_p95_seconds: float  # 95th percentile queue wait over all accepted requests
    wait_max_seconds: float
    scaling_activities: int  # changes of desired capacity
    delayed_wait_p95_seconds: float = 0.0  # 95th percentile among the requests that queued
    # Failed: shed, rejected, or queued past the allowed wait (the TTFT objective; planner.build.allowed_wait).
    failed_requests: float = 0.0
    failed_in_peaks: float = 0.0  # of those, inside a peak window of the traffic
    failed_worst_hour: float = 0.0  # in the worst rolling hour
    failed_worst_hour_percent: float = 0.0  # share of arrivals in the worst rolling hour (the run if shorter)
    failed_worst_day_percent: float = 0.0  # share of arrivals in the worst rolling 24 h (the run if shorter)
    delayed_within_objective: float = 0.0  # queued, but not past the allowed wait
    wait_p99_seconds: float = 0.0  # 99th percentile queue wait over all accepted requests
    shed_requests: float = 0.0  # arrivals shed at the admission deadline (429 at once): failed, never queued


@dataclass
class Scenario:
    """One way of provisioning the week: the configured policies, reactive only, static, oracle."""

    key: str  # "configured" | "reactive" | "static" | "oracle"
    title: str  # e.g. "Configured: schedules + reactive policies"
    start: datetime  # aware, UTC: minute 0
    variants: dict[str, VariantSeries]
    events: list[Event] = field(default_factory=list)
    per_variant: dict[str, Totals] = field(default_factory=dict)
    total: Totals | None = None
    failed: list[float] = field(default_factory=list)  # failed requests per minute, all variants (add_totals)

    @property
    def minutes(self) -> int:
        return len(next(iter(self.variants.values())).demand)

    def time_at(self, minute: int) -> datetime:
        return self.start + timedelta(minutes=minute)


@dataclass(frozen=True)
class FigureCheck:
    """A figure the config keeps for synth that the planner computes (alarms.monthly_budget_usd), against the
    planner's own, in one line: a stale one fails the verdict (planner.budget_limit)."""

    text: str
    stale: bool


@dataclass
class Plan:
    """Every scenario for one environment and one traffic profile."""

    env: str
    traffic_name: str
    scenarios: dict[str, Scenario]  # keyed by Scenario.key, "configured" first
    assumptions: dict[str, str]  # human-readable: "capacity per ml.g5.xlarge" -> "1200 requests/min"
    traffic_events: list[tuple[str, int, int]] = field(default_factory=list)  # (name, start, end minute)
    # From the traffic, not the config: when users come for sure (audiences' evenings, releases).
    peak_windows: list[tuple[str, int, int]] = field(default_factory=list)  # (name, start, end minute)
    time_zones: list[tuple[str, str]] = field(default_factory=list)  # (audience, IANA zone)
    budget: PlanBudget = field(default_factory=PlanBudget)  # what the verdict calls "met"
    warnings: list[str] = field(default_factory=list)  # config settings that cannot work as meant
    outages: str = ""  # the --unavailable scenario, in one line (planner.outages.describe); "" for none
    margin: str = ""  # how far capacity and provisioning can move before the verdict flips (planner.margin)
    frontier_cost: float | None = None  # planning.frontier's monthly cost: what the cost check judges against
    frontier_stale: str = ""  # why planning.frontier no longer applies ("" when it does)
    # planning.traffic's name when the frontier applies to it but not to this plan's traffic: cost not judged.
    frontier_found_on: str = ""
    traffic_file: str = ""  # the CSV the traffic was read from, as given ("" for a built profile)
    at_seeds_provisioning: str = ""  # the verdict again at the seeds' 8 min provisioning, one line
    # The checks met with every capacity lower by planning.budget.capacity_error_percent; None: not computed.
    at_capacity_error: set[str] | None = None
    figures: list[FigureCheck] = field(default_factory=list)  # checked by `bin/plan ENV` only (planner.cli)

    def peak_mask(self, minutes: int) -> list[bool]:
        mask = [False] * minutes
        for _, start, end in self.peak_windows:
            mask[start:end] = [True] * (min(end, minutes) - start)
        return mask
