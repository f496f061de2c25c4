"""One variant's instances and queue, as the planner models them.

Serving is a fluid queue: each in-service instance serves its type's `requests_per_minute` at the
SLO; what arrives beyond that waits in order. With an admission deadline (the serving image's
`container.admission_deadline_ms`, container/serving/admission.py) an arrival whose queue wait would
pass it is shed at once (429): it never joins the queue, so it delays nobody behind it, and it fails.
What is admitted and would still wait longer than the request timeout (only when capacity falls under
a queue) fails too, as rejected. Metrics follow from it. Concurrency (requests in the containers, running and queued: what
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
from workbench.planner.autoscaling import Load, StepScalingPolicy, TargetTrackingPolicy
from workbench.planner.calendar import ScheduledAction


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


class Fleet:
    """Mutable state of one variant during a replay. The sums over instance types (in service,
    provisioning, capacity, price) are kept up to date where the counts change, not recomputed every
    minute: a replay reads them about a hundred thousand times (workbench/planner/simulate.py)."""

    def __init__(self, model: VariantModel, timeout_seconds: int, deadline_seconds: float | None = None) -> None:
        """`deadline_seconds`: the admission deadline; None: nothing is shed (an image without the check)."""
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.deadline_seconds = deadline_seconds
        self.desired = 0
        self.ready_at = 0
        self.low, self.high = model.min_capacity, model.max_capacity  # moved by scheduled actions
        self.backlog = 0.0
        self.waiting = False  # wants instances no pool can provision
        self.pools = {pool.instance_type: pool for pool in model.pools}
        self._rates = {t: pool.capacity.requests_per_minute for t, pool in self.pools.items()}
        self._seconds = {t: pool.seconds_per_request for t, pool in self.pools.items()}
        self._launching: dict[str, int] = {}
        self.serving = {}  # in service, by instance type (the setter refreshes the sums)

    @property
    def serving(self) -> dict[str, int]:
        return self._serving

    @serving.setter
    def serving(self, counts: dict[str, int]) -> None:
        self._serving = counts
        self._refresh()

    def _refresh(self) -> None:
        self.in_service = sum(self._serving.values())
        self.provisioning = sum(self._launching.values())
        self.capacity = sum(n * self.pools[t].capacity.requests_per_minute for t, n in self._serving.items())
        counts = [*self._serving.items(), *self._launching.items()]
        self._billed_usd_per_hour = sum(n * self.pools[t].usd_per_hour for t, n in counts)

    def billed_usd_per_hour(self) -> float:
        """What the instances in service and provisioning cost (billed from launch)."""
        return self._billed_usd_per_hour

    def clamp(self, desired: int) -> int:
        return min(max(desired, self.low), self.high)

    def launch(self, count: int, minute: int, ready_at: int, available: Availability) -> str | None:
        """Start `count` instances of the first pool type available at `minute`; None when every pool is out."""
        for pool in self.model.pools:
            if available(pool.instance_type, minute):
                self._launching[pool.instance_type] = self._launching.get(pool.instance_type, 0) + count
                self.ready_at = ready_at
                self._refresh()
                return pool.instance_type
        return None

    def finish_launches(self) -> None:
        for instance_type, count in self._launching.items():
            self._serving[instance_type] = self._serving.get(instance_type, 0) + count
        self._launching = {}
        self._refresh()

    def release(self, count: int) -> None:
        """Scale in: the lowest-priority pool's instances go first (fallbacks before the preferred type)."""
        for pool in reversed(self.model.pools):
            taken = min(count, self.serving.get(pool.instance_type, 0))
            self._serving[pool.instance_type] = self._serving.get(pool.instance_type, 0) - taken
            count -= taken
        self._refresh()

    def serve(self, arrivals: float) -> tuple[float, float, float, float]:
        """Serve one minute; returns (served, shed, rejected, queue wait in seconds of this minute's admitted
        arrivals). Shed: this minute's arrivals past the admission deadline (never a request admitted
        earlier); rejected: admitted ones that would wait past the request timeout."""
        waiting = self.backlog + arrivals
        served = min(waiting, self.capacity)
        backlog = waiting - served
        shed = 0.0
        if self.deadline_seconds is not None:
            shed = min(arrivals, max(0.0, backlog - self.capacity * self.deadline_seconds / 60))
            backlog -= shed
        limit = self.capacity * self.timeout_seconds / 60
        rejected = max(0.0, backlog - limit)
        self.backlog = backlog - rejected
        wait = self.backlog / self.capacity * 60 if self.capacity else float(self.timeout_seconds)
        return served, shed, rejected, wait

    def load(self, arrivals: float, served: float) -> Load:
        """The metrics of the minute just served. Least outstanding requests routing: each type serves its
        share of capacity. The engine's own metrics keep the fluid queue's reading: a backlog means a full
        engine (`max_num_seqs` running) and QueueDepth is the backlog per instance."""
        n, total = self.in_service, self.capacity
        in_flight = (
            sum(served * count * self._rates[t] / total / 60 * self._seconds[t] for t, count in self._serving.items())
            if total > 0
            else 0
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
