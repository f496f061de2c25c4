"""One variant's instances and queue, as the planner models them.

Serving is a fluid queue: each in-service instance serves `requests_per_minute` at the SLO; what
arrives beyond that waits in order, and what would wait longer than the request timeout fails.
Metrics follow from it: engine concurrency by Little's law below capacity, a full engine
(`max_num_seqs` running) and a growing QueueDepth above it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from config.schema import InstanceCapacity
from planner.autoscaling import Load, StepScalingPolicy, TargetTrackingPolicy
from planner.calendar import ScheduledAction


@dataclass
class VariantModel:
    """What the simulation needs to know about a variant; built from the environment config."""

    name: str
    share: float  # of the endpoint's traffic, from the initial weights
    capacity: InstanceCapacity
    max_num_seqs: int
    min_capacity: int
    max_capacity: int
    policies: list[TargetTrackingPolicy | StepScalingPolicy] = field(default_factory=list)
    actions: list[ScheduledAction] = field(default_factory=list)

    @property
    def seconds_per_request(self) -> float:
        """Time a request holds a sequence slot at the SLO rate (Little's law)."""
        return self.capacity.concurrent_sequences / (self.capacity.requests_per_minute / 60)


@dataclass
class Fleet:
    model: VariantModel
    timeout_seconds: int
    desired: int = 0
    in_service: int = 0
    launching: int = 0
    ready_at: int = 0
    low: int = 0  # the scalable target's current range, moved by scheduled actions
    high: int = 0
    backlog: float = 0.0

    def __post_init__(self) -> None:
        self.low, self.high = self.model.min_capacity, self.model.max_capacity

    @property
    def capacity(self) -> float:
        return self.in_service * self.model.capacity.requests_per_minute

    def clamp(self, desired: int) -> int:
        return min(max(desired, self.low), self.high)

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
        """The metrics of the minute just served."""
        n = self.in_service
        if self.backlog > 0:
            running = float(self.model.max_num_seqs)
        else:
            running = served / 60 * self.model.seconds_per_request / n
        return Load(
            invocations=arrivals,
            concurrency=running * n + self.backlog,
            queue_depth=self.backlog / n,
            running=running,
            in_service=n,
        )

    def start_at(self, demand: float) -> None:
        """Begin the run settled: enough instances for the first minute, as the policies would leave it."""
        needed = math.ceil(demand / self.model.capacity.requests_per_minute)
        self.desired = self.in_service = self.clamp(needed)
