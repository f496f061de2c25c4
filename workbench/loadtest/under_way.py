"""Sessions already under way when a conversation step starts, as a steady stream has them.

A step that starts with no session open needs a long warm-up before its turns come in a steady stream's
proportions (later turns of older sessions): the p90 of how long after its session's first turn a turn
comes is 106 s for capacity/workload.yaml, and at 106 s + 60 s a step a 10-minute budget holds three
steps, too few for an answer. So a step starts with the sessions a steady stream has open at any moment:
those that arrived (Poisson, at the step's session rate) within HORIZON_QUANTILE of the longest sessions
before it and still have a turn to send, each at the turn it has reached, its earlier exchanges written
as the workload writes them (the plan's user turns, answers of the plan's lengths in the workload's
words), its next turn due the rest of its think time after the start. Their past is computed with think
times only (answer times are the server's, unknown before the run), as the 106 s figure was.

What is left for the warm-up: the server never saw those sessions' earlier turns, so none of their
prefixes is cached, and the first turn each resumes is a full prefill that a steady stream would mostly
have found cached. The warm-up is the p90 of the time until a session under way sends its next turn
(`resume_seconds`: 24 s for capacity/workload.yaml): when the window opens, 90 % of them have resumed and
are cached from then on, and the server's queue has had that long to settle at the step's rate.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING

from config.domain.workload import draw_lognormal, draw_turns

if TYPE_CHECKING:  # capacity.conversations imports this module
    from workbench.loadtest.session_plan import SessionPlan

HORIZON_QUANTILE = 0.999  # sessions longer than this (think times only) are left out: 0.1 % of them
SIMULATED_SESSIONS = 10_000


@dataclass(frozen=True)
class Resumed:
    """A session under way at the step's start: resume it at turn `turn` (0-based), `delay` seconds in."""

    plan: SessionPlan
    turn: int
    delay: float


@dataclass(frozen=True)
class SteadyState:
    """What a steady stream of these sessions looks like, simulated from the workload's file alone."""

    resume_seconds: float  # p90 of the time until a session under way sends its next turn
    horizon_seconds: float  # HORIZON_QUANTILE of session length: older sessions have ended


def steady_state(turns_mean: float, turns_max: int, think: tuple[float, float, float, float]) -> SteadyState:
    """Fixed seeds: the same figures every run. A session open at a random moment is one of its think
    gaps picked with a chance proportional to the gap's length, at a uniform point of it."""
    rng, gaps, lengths = random.Random(0), [], []
    for _ in range(SIMULATED_SESSIONS):
        thinks = [draw_lognormal(rng, *think) for _ in range(draw_turns(rng, turns_mean, turns_max) - 1)]
        gaps += thinks
        lengths.append(sum(thinks))
    lengths.sort()
    horizon = lengths[math.ceil(HORIZON_QUANTILE * len(lengths)) - 1]
    if not gaps:  # single-turn sessions: nothing is ever under way
        return SteadyState(0.0, 0.0)
    picked = random.Random(1)
    delays = sorted(gap * picked.random() for gap in picked.choices(gaps, weights=gaps, k=SIMULATED_SESSIONS))
    return SteadyState(round(delays[math.ceil(0.9 * len(delays)) - 1], 1), horizon)


def under_way(plans: Iterator[SessionPlan], session_rate: float, horizon: float, rng: random.Random) -> list[Resumed]:
    """The sessions open at the start: arrivals over the `horizon` before it (`session_rate` a second),
    each drawing the next plan, kept when a turn remains at or after the start."""
    found, age = [], rng.expovariate(session_rate) if session_rate > 0 else math.inf
    while age < horizon:
        plan = next(plans)
        offsets = list(accumulate(plan.thinks, initial=0.0))  # each turn's time after the first
        turn = next((index for index, offset in enumerate(offsets) if offset >= age), None)
        if turn is not None:
            found.append(Resumed(plan, turn, offsets[turn] - age))
        age += rng.expovariate(session_rate)
    return found
