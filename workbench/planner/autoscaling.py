"""Application Auto Scaling's policies, minute by minute, as documented for target tracking and steps.

What is modelled (Application Auto Scaling user guide, except where marked):
- A CloudWatch alarm on one-minute datapoints goes to ALARM after N consecutive breaching minutes;
  while it stays there the policy runs again every minute ("adjustments can continue for additional
  alarm breaches until the alarm state returns to OK").
- Target tracking owns two alarms and asks for the capacity that brings the metric back to the
  target: ceil(load / target). Their shape is not documented for any SageMaker metric; the constants
  below are what AAS is commonly seen to create for one-minute metrics (3 minutes above the target to
  scale out, 15 below 90 % of it to scale in) and our assumption for the high-resolution metric
  `SageMakerVariantConcurrentRequestsPerModelHighResolution`: its datapoints come every 10 s and a
  policy on it "scale[s] out much more quickly ... scales in at the same speed as it would for
  standard metrics" (SageMaker Developer Guide, "Define a scaling policy",
  docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html); how many
  datapoints its scale-out alarm needs is not stated: assumed 3 (30 s), so a breach is acted on
  from the next minute. Every plan states these (`alarm_assumptions`). Check them against
  `aws cloudwatch describe-alarms` on a real endpoint and change them here if they differ.
- Scale-out cooldown: a policy does not raise capacity again unless a larger scale-out is triggered;
  the capacity its last activity added counts towards the next. Scale-in cooldown blocks scale-in
  only; a scale-out goes through at once.
- Several policies at once: the one giving the largest capacity wins (see `combine`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

from config.metric_names import HIGH_RESOLUTION
from config.schema import EngineStepScaling, TargetTracking

# One-minute metrics (SageMakerVariantInvocationsPerInstance): seen, not documented.
TRACKING_SCALE_OUT_MINUTES_DEFAULT = 3
# The high-resolution metric: 10 s datapoints (documented); 3 of them to alarm (assumed, undocumented).
HIGH_RESOLUTION_PERIOD_SECONDS = 10
HIGH_RESOLUTION_SCALE_OUT_DATAPOINTS = 3
TRACKING_SCALE_OUT_MINUTES = {
    HIGH_RESOLUTION: max(1, math.ceil(HIGH_RESOLUTION_PERIOD_SECONDS * HIGH_RESOLUTION_SCALE_OUT_DATAPOINTS / 60))
}
# Scale-in, both metrics ("at the same speed as ... standard metrics" for high resolution): seen, not documented.
TRACKING_SCALE_IN_MINUTES = 15
TRACKING_SCALE_IN_FRACTION = 0.9
NEVER = -(10**9)


class Load(NamedTuple):
    """One minute of a variant, as its metrics saw it (a named tuple: a replay makes thousands)."""

    invocations: float  # requests that reached the variant
    concurrency: float  # in flight, running and queued, whole variant
    queue_depth: float  # waiting, per instance (vLLM num_requests_waiting, averaged)
    running: float  # running sequences, per instance
    in_service: int


@dataclass(frozen=True)
class Proposal:
    policy: str
    desired: int


class Alarm:
    """ALARM after `periods` consecutive breaching one-minute datapoints; OK at the first non-breach."""

    def __init__(self, periods: int) -> None:
        self.periods = periods
        self.breaches = 0

    def update(self, breaching: bool) -> bool:
        self.breaches = self.breaches + 1 if breaching else 0
        return self.breaches >= self.periods

    @property
    def just_fired(self) -> bool:
        return self.breaches == self.periods


def alarm_assumptions() -> str:
    """The alarm shapes the plan stands on, in one line (AWS documents none of the numbers)."""
    high = TRACKING_SCALE_OUT_MINUTES[HIGH_RESOLUTION]
    return (
        f"scale out after {TRACKING_SCALE_OUT_MINUTES_DEFAULT} min above target on one-minute metrics; on "
        f"{HIGH_RESOLUTION} after {HIGH_RESOLUTION_SCALE_OUT_DATAPOINTS} datapoints of "
        f"{HIGH_RESOLUTION_PERIOD_SECONDS} s (acted on within {high} min; AWS documents the 10 s datapoints, not "
        f"the alarm: assumed); scale in after {TRACKING_SCALE_IN_MINUTES} min below "
        f'{TRACKING_SCALE_IN_FRACTION:.0%} of the target on either (AWS: high resolution "scales in at the same '
        'speed" as standard metrics; the standard alarms are as commonly seen, not documented)'
    )


class TargetTrackingPolicy:
    def __init__(self, config: TargetTracking, target_value: float | None = None) -> None:
        """`target_value`: the resolved target (config.scaling_target); default the config's explicit one."""
        self.name = f"target tracking {config.metric}"
        self.metric = config.metric
        self.target = target_value if target_value is not None else config.target_value
        if self.target is None:
            raise ValueError("target tracking needs a target: pass config.scaling_target.tracking_target(...)")
        self.scale_out = Alarm(TRACKING_SCALE_OUT_MINUTES.get(config.metric, TRACKING_SCALE_OUT_MINUTES_DEFAULT))
        self.scale_in = Alarm(TRACKING_SCALE_IN_MINUTES)
        self.out_cooldown = config.scale_out_cooldown_seconds / 60
        self.in_cooldown = config.scale_in_cooldown_seconds / 60
        self.last_out, self.last_out_to, self.last_in = NEVER, 0, NEVER

    def settled(self, requests_per_minute: float, seconds_per_request: float) -> int:
        """The capacity this policy keeps for a steady demand (concurrency by Little's law)."""
        total = (
            requests_per_minute / 60 * seconds_per_request if self.metric == HIGH_RESOLUTION else requests_per_minute
        )
        return math.ceil(total / self.target)

    def _total_load(self, load: Load) -> float:
        return load.concurrency if self.metric == HIGH_RESOLUTION else load.invocations

    def propose(self, minute: int, load: Load, desired: int) -> Proposal | None:
        per_instance = self._total_load(load) / load.in_service
        out = self.scale_out.update(per_instance > self.target)
        quiet = self.scale_in.update(per_instance < TRACKING_SCALE_IN_FRACTION * self.target)
        wanted = math.ceil(self._total_load(load) / self.target)
        if out and wanted > desired:
            if minute - self.last_out < self.out_cooldown and wanted <= self.last_out_to:
                return None
            self.last_out, self.last_out_to = minute, wanted
            return Proposal(self.name, wanted)
        cooled = minute - self.last_in >= self.in_cooldown and minute - self.last_out >= self.out_cooldown
        if quiet and wanted < desired and cooled:
            self.last_in = minute
            return Proposal(self.name, wanted)
        return None

    def alarms(self) -> list[tuple[str, Alarm]]:
        return [(f"{self.name} scale-out", self.scale_out), (f"{self.name} scale-in", self.scale_in)]

    @functools.cached_property
    def alarm_labels(self) -> tuple[str, str]:
        """The labels alarms() gives, worked out once (a fast-forwarded replay asks for them thousands of times)."""
        return f"{self.name} scale-out", f"{self.name} scale-in"


class StepScalingPolicy:
    """The pair of step policies the stack builds per engine metric (constructs/variant_autoscaling.py)."""

    def __init__(self, config: EngineStepScaling) -> None:
        self.name = f"{config.metric} steps"
        self.metric = config.metric
        self.steps = sorted(config.scale_out, key=lambda s: s.at_or_above)
        self.scale_in_below = config.scale_in_below
        self.scale_out = Alarm(config.scale_out_after_minutes)
        self.scale_in = Alarm(config.scale_in_after_minutes)
        self.out_cooldown = config.cooldown_seconds / 60
        self.in_cooldown = config.scale_in_cooldown_seconds / 60
        self.last_out, self.last_out_base, self.last_out_added, self.last_in = NEVER, 0, 0, NEVER

    def value(self, load: Load) -> float:
        return load.queue_depth if self.metric == "QueueDepth" else load.running

    def propose(self, minute: int, load: Load, desired: int) -> Proposal | None:
        value = self.value(load)
        out = self.scale_out.update(value >= self.steps[0].at_or_above)
        quiet = self.scale_in_below is not None and self.scale_in.update(value < self.scale_in_below)
        if out:
            added = max(s.add_instances for s in self.steps if value >= s.at_or_above)
            if minute - self.last_out < self.out_cooldown:
                if added <= self.last_out_added:
                    return None
                # A larger step during cooldown: what the last activity added counts towards it.
                self.last_out, self.last_out_added = minute, added
                return Proposal(self.name, self.last_out_base + added)
            self.last_out, self.last_out_base, self.last_out_added = minute, desired, added
            return Proposal(self.name, desired + added)
        if quiet and minute - self.last_in >= self.in_cooldown:
            self.last_in = minute
            return Proposal(self.name, desired - 1)
        return None

    def alarms(self) -> list[tuple[str, Alarm]]:
        return [(f"{self.metric} scale-out", self.scale_out), (f"{self.metric} scale-in", self.scale_in)]


def combine(proposals: list[Proposal], desired: int) -> Proposal | None:
    """Any scale-out beats every scale-in; among either, the largest capacity wins."""
    if not proposals:
        return None
    outs = [p for p in proposals if p.desired > desired]
    chosen = max(outs or proposals, key=lambda p: p.desired)
    return chosen if chosen.desired != desired else None
