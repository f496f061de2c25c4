"""Admission by projected wait: a request that would wait past the deadline for its first token is
answered 429 at once, before the engine sees it, instead of joining vLLM's unbounded queue.

The estimate (docs/reference/container.md "Admission"): the engine runs at most `slots` sequences at once
(`--max-num-seqs`; config.checks.vram_budget keeps that many sequences' KV cache on the GPU), so the
next request's place in the queue is `load - slots + 1`, where `load` is the requests this middleware
has handed to the engine and not yet finished. Under saturation a slot frees every `slot_time / slots`
on average, so its projected time to first token is

    place * slot_time / slots + first_token_time

with `slot_time` (time a request holds a slot: its time in the middleware minus vLLM's own per-request
queue time) and `first_token_time` (vLLM's per-request time from scheduling to first token) as moving
averages over recently completed requests.

Why not vLLM's `vllm:num_requests_waiting` / `running` gauges: they are updated once per engine step
from the engine core's scheduler stats, so every request of a burst arriving within one step would read
the same stale count and all be admitted. `load` changes synchronously with each decision on the one
event loop, so a burst is judged request by request, and it costs an integer comparison per request.

Until one request has completed there is no slot time to project with: then only a request that finds
a free slot is admitted (nothing is queued on a guess). Warmup requests are never shed and never teach
the averages (they are short by design); they do count in `load` while they run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Weight of the newest completed request in the moving averages: about the last 20 requests count.
SMOOTHING = 0.1


@dataclass(frozen=True, slots=True)
class Shed:
    """Why a request was not admitted: its projected wait for a slot (None: no completed request yet
    to project from) and the Retry-After seconds it is told."""

    projected_wait_ms: float | None
    retry_after_seconds: int
    message: str


class Admission:
    def __init__(self, deadline_ms: float | None, slots: int) -> None:
        self.deadline_ms = deadline_ms  # None: admission off, every request is admitted
        self.slots = slots
        self.load = 0  # handed to the engine and unfinished (warmup included)
        self.shed = 0  # cumulative, for the supervisor's ShedRequests metric
        self.slot_ms: float | None = None
        self.first_token_ms: float | None = None

    def check(self) -> Shed | None:
        """None: admit (the caller then calls enter/leave around the engine call)."""
        place = self.load - self.slots + 1
        if self.deadline_ms is None or place <= 0:
            return None
        if self.slot_ms is None:
            self.shed += 1
            message = (
                f"over capacity: all {self.slots} engine slots are busy and no request has completed yet "
                "to project a wait from"
            )
            return _shed(None, 1, message)
        wait_ms = place * self.slot_ms / self.slots
        if wait_ms + (self.first_token_ms or 0.0) <= self.deadline_ms:
            return None
        self.shed += 1
        message = (
            f"over capacity: the projected wait for an engine slot is {wait_ms / 1000:.1f} s ({place} requests "
            f"queued ahead), over the admission deadline of {self.deadline_ms / 1000:g} s for the first token"
        )
        return _shed(round(wait_ms, 1), max(1, math.ceil(wait_ms / 1000)), message)

    def enter(self) -> None:
        self.load += 1

    def leave(self) -> None:
        self.load -= 1

    def observe(self, total_ms: float, queue_ms: float, ttft_ms: float) -> None:
        """A completed request's figures: total in the middleware, vLLM's queue time, and its time to
        first token from arrival (queue included)."""
        slot_ms, first_ms = max(0.0, total_ms - queue_ms), max(0.0, ttft_ms - queue_ms)
        if self.slot_ms is None or self.first_token_ms is None:
            self.slot_ms, self.first_token_ms = slot_ms, first_ms
            return
        self.slot_ms += SMOOTHING * (slot_ms - self.slot_ms)
        self.first_token_ms += SMOOTHING * (first_ms - self.first_token_ms)

    def snapshot(self) -> dict[str, float | int | None]:
        return {
            "deadline_ms": self.deadline_ms,
            "slots": self.slots,
            "load": self.load,
            "shed": self.shed,
            "slot_ms": None if self.slot_ms is None else round(self.slot_ms, 1),
            "first_token_ms": None if self.first_token_ms is None else round(self.first_token_ms, 1),
        }


def _shed(wait_ms: float | None, retry_after: int, reason: str) -> Shed:
    # SageMaker hands the caller the container's status and body (ModelError's OriginalStatusCode and
    # OriginalMessage) but no response header, so Retry-After is in the message too (docs/reference/container.md).
    return Shed(wait_ms, retry_after, f"{reason}; retry after {retry_after} s (Retry-After: {retry_after})")
