"""One variant's instances and queue, as the planner models them.

Serving is a fluid queue: each in-service instance serves its type's `requests_per_minute` at the
SLO; what arrives beyond that waits in order, and what would wait longer than the request timeout
fails. Metrics follow from it. Concurrency (requests in the containers, running and queued: what
`SageMakerVariantConcurrentRequestsPerModelHighResolution` counts) is Little's law on what is served,
served rate x seconds per request (`concurrent_sequences` per instance at capacity), plus the queue.
The engine metrics: a full engine (`max_num_seqs` running) and a growing QueueDepth above capacity.

A variant's fleet may hold several instance types (ProductionVariant.InstancePools): new instances
come from the first pool, in priority order, whose type can be provisioned at that minute; scale-in
releases the lowest-priority pool's instances first. Both as the SageMaker guide page
"realtime-endpoints-heterogeneous" describes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from config.schema import InstanceCapacity
from planner.autoscaling import Load, StepScalingPolicy, TargetTrackingPolicy
from planner.calendar import ScheduledAction


@dataclass(frozen=True)
class Pool:
    """One instance type a variant may run on, with what an instance serves and costs."""

    instance_type: str
    capacity: InstanceCapacity
    usd_per_hour: float = 0.0

    @property
    def seconds_per_request(self) -> float:
        """Time a request holds a sequence slot at the SLO rate (Little's law)."""
        return self.capacity.concurrent_sequences / (self.capacity.requests_per_minute / 60)


@dataclass
class VariantModel:
    """What the simulation needs to know about a variant; built from the environment config."""

    name: str
    share: float  # of the endpoint's traffic, from the initial weights
    capacity: InstanceCapacity  # of the preferred instance type (priority 1)
    max_num_seqs: int
    min_capacity: int
    max_capacity: int
    policies: list[TargetTrackingPolicy | StepScalingPolicy] = field(default_factory=list)
    actions: list[ScheduledAction] = field(default_factory=list)
    instance_type: str = "instance"
    usd_per_hour: float = 0.0
    fallbacks: list[Pool] = field(default_factory=list)  # InstancePools priority 2..n

    @property
    def pools(self) -> list[Pool]:
        return [Pool(self.instance_type, self.capacity, self.usd_per_hour), *self.fallbacks]

    @property
    def seconds_per_request(self) -> float:
        return self.pools[0].seconds_per_request


# Can an instance of this type be provisioned at this minute? (planner.outages)
Availability = Callable[[str, int], bool]


def always(instance_type: str, minute: int) -> bool:
    return True


@dataclass
class Fleet:
    model: VariantModel
    timeout_seconds: int
    desired: int = 0
    serving: dict[str, int] = field(default_factory=dict)  # in service, by instance type
    launching: dict[str, int] = field(default_factory=dict)  # provisioning, by instance type
    ready_at: int = 0
    low: int = 0  # the scalable target's current range, moved by scheduled actions
    high: int = 0
    backlog: float = 0.0
    waiting: bool = False  # wants instances no pool can provision

    def __post_init__(self) -> None:
        self.low, self.high = self.model.min_capacity, self.model.max_capacity
        self.pools = {pool.instance_type: pool for pool in self.model.pools}

    @property
    def in_service(self) -> int:
        return sum(self.serving.values())

    @property
    def provisioning(self) -> int:
        return sum(self.launching.values())

    @property
    def capacity(self) -> float:
        return sum(n * self.pools[t].capacity.requests_per_minute for t, n in self.serving.items())

    def billed_usd_per_hour(self) -> float:
        """What the instances in service and provisioning cost (billed from launch)."""
        counts = [*self.serving.items(), *self.launching.items()]
        return sum(n * self.pools[t].usd_per_hour for t, n in counts)

    def clamp(self, desired: int) -> int:
        return min(max(desired, self.low), self.high)

    def launch(self, count: int, minute: int, ready_at: int, available: Availability) -> str | None:
        """Start `count` instances of the first pool type available at `minute`; None when every pool is out."""
        for pool in self.model.pools:
            if available(pool.instance_type, minute):
                self.launching[pool.instance_type] = self.launching.get(pool.instance_type, 0) + count
                self.ready_at = ready_at
                return pool.instance_type
        return None

    def finish_launches(self) -> None:
        for instance_type, count in self.launching.items():
            self.serving[instance_type] = self.serving.get(instance_type, 0) + count
        self.launching = {}

    def release(self, count: int) -> None:
        """Scale in: the lowest-priority pool's instances go first (fallbacks before the preferred type)."""
        for pool in reversed(self.model.pools):
            taken = min(count, self.serving.get(pool.instance_type, 0))
            self.serving[pool.instance_type] = self.serving.get(pool.instance_type, 0) - taken
            count -= taken

    def serve(self, arrivals: float) -> tuple[float, float, float]:
        """Serve one minute; returns (served, rejected, queue wait in seconds of this minute's arrivals)."""
        waiting = self.backlog + arrivals
        served = min(waiting, self.capacity)
        backlog = waiting - served
        limit = self.capacity * self.timeout_seconds / 60
        rejected = max(0.0, backlog - limit)
        self.backlog = backlog - rejected
        wait = self.backlog / self.capacity * 60 if self.capacity else float(self.timeout_seconds)
        return served, rejected, wait

    def load(self, arrivals: float, served: float) -> Load:
        """The metrics of the minute just served. Least outstanding requests routing: each type serves its
        share of capacity. The engine's own metrics keep the fluid queue's reading: a backlog means a full
        engine (`max_num_seqs` running) and QueueDepth is the backlog per instance."""
        n, total = self.in_service, self.capacity
        in_flight = sum(
            served * count * self.pools[t].capacity.requests_per_minute / total / 60 * self.pools[t].seconds_per_request
            for t, count in self.serving.items()
            if total > 0
        )
        running = float(self.model.max_num_seqs) if self.backlog > 0 else in_flight / n
        return Load(
            invocations=arrivals,
            concurrency=in_flight + self.backlog,
            queue_depth=self.backlog / n,
            running=running,
            in_service=n,
        )

    def start_at(self, demand: float, available: Availability = always) -> None:
        """Begin the run settled: as many instances of the first pool type available then as the policies
        would leave for the first minute's demand (the capacity it needs when no target tracking asks for more)."""
        pool = next((p for p in self.model.pools if available(p.instance_type, 0)), self.model.pools[0])
        needed = math.ceil(demand / pool.capacity.requests_per_minute)
        for policy in self.model.policies:
            if isinstance(policy, TargetTrackingPolicy):
                needed = max(needed, policy.settled(demand, pool.seconds_per_request))
        self.desired = self.clamp(needed)
        self.serving = {pool.instance_type: self.desired}
