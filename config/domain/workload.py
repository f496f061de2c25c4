"""The request workload `bin/loadtest` sends by default (config/domain/workload.yaml) and what it costs a GPU,
in tokens: config owns the file because config's checks read it (the VRAM budget, the physical ceiling)
and the layers above (capacity/, the load tool) read it from here, never the other way round.

Two shapes from one file: single turns (a system prompt, a user turn, an answer) and conversations
(sessions whose turns carry the history so far). For each, `TurnTokens` gives the means the ceiling
needs (config.domain.physics): tokens served from vLLM's prefix cache, tokens prefilled, tokens generated,
the context a decode step reads. Single turns in closed form; conversations by simulating sessions
with a fixed seed (no server, the same figures on every run): `workload_contexts`, `conversation_tokens`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ruamel.yaml import YAML

from container.serving.tokens import TOKENS_PER_MESSAGE, TOKENS_PER_PROMPT

if TYPE_CHECKING:
    from config.schema import EnvironmentConfig

WORKLOAD_FILE = Path(__file__).with_name("workload.yaml")
WORKLOAD_SOURCE = "config/domain/workload.yaml"
SIMULATED_SESSIONS = 10_000  # p95 within a few tokens of a 100,000-session run's


@cache
def default_workload_raw() -> dict[str, Any]:
    """config/domain/workload.yaml as a mapping (read once)."""
    return YAML(typ="safe", pure=True).load(WORKLOAD_FILE.read_text())


# --- what a request costs, in tokens -----------------------------------------------------------------


@dataclass(frozen=True)
class TurnTokens:
    """Mean tokens of one request of a workload: what its ceiling is computed for."""

    name: str  # "conversations", "single turns", or a published benchmark's shape
    cached: float  # served from the prefix cache: no prefill FLOPs, but read at every decode step
    uncached: float  # prefilled
    generated: float  # decoded token by token
    decode_context: float  # the context a decode step reads, averaged over decode steps
    prefill_positions: float  # sum over prefilled tokens of the positions each attends to
    source: str

    @property
    def prompt(self) -> float:
        return self.cached + self.uncached


def fixed_tokens(name: str, prompt: float, generated: float, source: str) -> TurnTokens:
    """A benchmark's fixed-length requests, nothing cached (random prompts)."""
    return TurnTokens(name, 0.0, prompt, generated, prompt + generated / 2, prompt * prompt / 2, source)


def _phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def clipped_lognormal_moment(median: float, sigma: float, low: float, high: float, k: int = 1) -> float:
    """E[min(max(X, low), high)^k] for X log-normal with this median and sigma, in closed form.

    For c > 0, E[X^k; X < c] = e^(kμ + k²σ²/2) Φ((ln c − μ − kσ²)/σ). The workload rounds each draw to a
    whole token before clipping; that changes the mean by less than 10⁻⁸ tokens here.
    """
    if sigma == 0:
        return min(max(median, low), high) ** k
    mu = math.log(median)
    raw = math.exp(k * mu + (k * sigma) ** 2 / 2)
    z_low, z_high = (math.log(low) - mu) / sigma, (math.log(high) - mu) / sigma
    inside = raw * (_phi(z_high - k * sigma) - _phi(z_low - k * sigma))
    return inside + low**k * _phi(z_low) + high**k * (1 - _phi(z_high))


def clipped_lognormal_mean(median: float, sigma: float, low: float, high: float) -> float:
    return clipped_lognormal_moment(median, sigma, low, high, 1)


def prompt_tokens(system: int, history: int, exchanges: int, user: int) -> int:
    """A chat prompt's tokens as the serving container's guard counts them (container/serving/tokens.py):
    the text, plus the chat template's framing per message and per prompt."""
    return system + history + user + TOKENS_PER_MESSAGE * (2 + 2 * exchanges) + TOKENS_PER_PROMPT


def single_turn_tokens(raw: dict[str, Any], source: str = WORKLOAD_SOURCE) -> TurnTokens:
    """A single turn of a workload mapping: the system prompt cached, the user turn (uniform between min
    and max) and the chat framing prefilled, the answer log-normal and clipped."""
    user, answer = raw["user_turn_tokens"], raw["answer_tokens"]
    low, high = float(user["min"]), float(user["max"])
    framing = prompt_tokens(0, 0, 0, 0)
    mean_new = (low + high) / 2 + framing
    mean_new_squared = (low * low + low * high + high * high) / 3 + 2 * framing * (low + high) / 2 + framing**2
    moments = [float(answer[key]) for key in ("median", "sigma", "min", "max")]
    generated = clipped_lognormal_moment(*moments, k=1)
    system = float(raw["system_prompt_tokens"])
    return TurnTokens(
        name="single turns",
        cached=system,
        uncached=mean_new,
        generated=generated,
        # a step at answer token j reads prompt + j: weighted by each answer's steps, E[a²] / (2 E[a])
        decode_context=system + mean_new + clipped_lognormal_moment(*moments, k=2) / (2 * generated),
        prefill_positions=system * mean_new + mean_new_squared / 2,
        source=source,
    )


# --- conversations ------------------------------------------------------------------------------------


def draw_turns(rng: random.Random, mean: float, most: int) -> int:
    """Turns in a session: geometric on 1, 2, 3, ... with this mean (before the cap), at most `most`."""
    if mean <= 1:
        return 1
    stay = 1 - 1 / mean  # the chance of one more turn
    return min(most, 1 + int(math.log(1.0 - rng.random()) / math.log(stay)))


def mean_turns(mean: float, most: int) -> float:
    """E[min(N, most)] for draw_turns' N: the sum over n = 1..most of P(N >= n)."""
    if mean <= 1:
        return 1.0
    stay = 1 - 1 / mean
    return (1 - stay**most) / (1 - stay)


def draw_lognormal(rng: random.Random, median: float, sigma: float, low: float, high: float) -> float:
    return min(max(math.exp(rng.gauss(math.log(median), sigma)), low), high)


def draw_answer(rng: random.Random, answer: dict[str, Any]) -> int:
    """An answer's length in tokens (config/domain/workload.yaml `answer_tokens`): log-normal, rounded, clipped."""
    drawn = round(math.exp(rng.gauss(math.log(float(answer["median"])), float(answer["sigma"]))))
    return min(max(drawn, int(answer["min"])), int(answer["max"]))


class Turn(NamedTuple):
    prompt: int
    answer: int
    trimmed: bool  # its oldest exchanges were dropped to fit the budget
    cached: int  # prompt tokens the prefix cache holds from the session's previous turn


def session_contexts(raw: dict[str, Any], budget: int, rng: random.Random) -> list[Turn]:
    """One simulated session. Each turn sends the system prompt, the exchanges so far and a new user
    turn; the oldest exchanges are dropped whole until the prompt fits `budget` (what
    capacity.conversations.ConversationWorkload sends). A turn whose prompt extends the previous turn's
    prompt and answer finds them in the prefix cache; a trimmed one shares only the system prompt."""
    conversation, user, answer = raw["conversation"], raw["user_turn_tokens"], raw["answer_tokens"]
    turns = draw_turns(rng, float(conversation["turns"]["mean"]), int(conversation["turns"]["max"]))
    system, history, kept, out = int(raw["system_prompt_tokens"]), 0, [], []
    for _ in range(turns):
        new, answered = rng.randint(int(user["min"]), int(user["max"])), draw_answer(rng, answer)
        prompt, trimmed = prompt_tokens(system, history, len(kept), new), False
        while prompt > budget and kept:
            dropped = kept.pop(0)
            history -= dropped
            prompt, trimmed = prompt_tokens(system, history, len(kept), new), True
        cached = system if trimmed or not out else out[-1].prompt + out[-1].answer
        out.append(Turn(prompt, answered, trimmed, cached))
        kept.append(new + answered)
        history += new + answered
    return out


@cache
def simulated_turns(budget: int, sessions: int = SIMULATED_SESSIONS) -> tuple[Turn, ...]:
    """Every turn of `sessions` simulated sessions of config/domain/workload.yaml, prompts within `budget`."""
    return simulate(default_workload_raw(), budget, sessions)


def simulate(raw: dict[str, Any], budget: int, sessions: int = SIMULATED_SESSIONS) -> tuple[Turn, ...]:
    rng = random.Random(0)
    return tuple(turn for _ in range(sessions) for turn in session_contexts(raw, budget, rng))


@dataclass(frozen=True)
class WorkloadContexts:
    """Context lengths over every turn of SIMULATED_SESSIONS sessions (a turn's context at its last
    token: its prompt plus its answer, what its sequence holds in the KV cache)."""

    p95_tokens: int
    mean_tokens: float
    p95_prompt_tokens: int
    trimmed_percent: float  # turns whose oldest exchanges were dropped to fit the budget
    budget_tokens: int
    turns: int  # simulated

    def describe(self) -> str:
        return (
            f"p95 context {self.p95_tokens:,} tokens (mean {self.mean_tokens:,.0f}; prompts within "
            f"{self.budget_tokens:,} tokens, {self.trimmed_percent:.0f} % of turns trimmed)"
        )


def _p95(values: list[int]) -> int:
    return values[max(0, math.ceil(0.95 * len(values)) - 1)]


def contexts_of(turns: tuple[Turn, ...], budget: int) -> WorkloadContexts:
    contexts = sorted(t.prompt + t.answer for t in turns)
    return WorkloadContexts(
        p95_tokens=_p95(contexts),
        mean_tokens=sum(contexts) / len(contexts),
        p95_prompt_tokens=_p95(sorted(t.prompt for t in turns)),
        trimmed_percent=100 * sum(t.trimmed for t in turns) / len(turns),
        budget_tokens=budget,
        turns=len(turns),
    )


def workload_contexts(raw: dict[str, Any], budget: int, sessions: int = SIMULATED_SESSIONS) -> WorkloadContexts:
    """The contexts of a workload mapping with a `conversation:` section, prompts kept within `budget`."""
    return contexts_of(simulate(raw, budget, sessions), budget)


def tokens_of_turns(turns: tuple[Turn, ...], source: str = WORKLOAD_SOURCE) -> TurnTokens:
    """Mean tokens of the simulated turns; the decode context weighted by each turn's decode steps."""
    n, generated = len(turns), sum(t.answer for t in turns)
    return TurnTokens(
        name="conversations",
        cached=sum(t.cached for t in turns) / n,
        uncached=sum(t.prompt - t.cached for t in turns) / n,
        generated=generated / n,
        decode_context=sum(t.answer * (t.prompt + t.answer / 2) for t in turns) / generated,
        prefill_positions=sum((t.prompt - t.cached) * (t.cached + (t.prompt - t.cached) / 2) for t in turns) / n,
        source=source,
    )


def prompt_budget(raw: dict[str, Any], engine_budget: int) -> int:
    return min(int(raw["conversation"]["context_budget_tokens"]), engine_budget)


@cache
def default_contexts(engine_budget: int) -> WorkloadContexts | None:
    """config/domain/workload.yaml's conversations within min(its budget, `engine_budget`); None without a
    `conversation:` section (single turns only)."""
    raw = default_workload_raw()
    if not isinstance(raw, dict) or "conversation" not in raw:
        return None
    budget = prompt_budget(raw, engine_budget)
    return contexts_of(simulated_turns(budget), budget)


@cache
def default_tokens(engine_budget: int) -> tuple[TurnTokens, TurnTokens | None]:
    """(single turns, conversations or None) of config/domain/workload.yaml, prompts within `engine_budget`."""
    raw = default_workload_raw()
    single = single_turn_tokens(raw)
    if "conversation" not in raw:
        return single, None
    return single, tokens_of_turns(simulated_turns(prompt_budget(raw, engine_budget)))


def without_affinity(turns: tuple[Turn, ...], system: int) -> tuple[Turn, ...]:
    """The turns as a routing that keeps no conversation on its instance serves them: only the system
    prompt, which every request shares, is in the prefix cache; the rest of each prompt is prefilled."""
    return tuple(t._replace(cached=min(system, t.prompt)) for t in turns)


@cache
def routed_tokens(engine_budget: int, keeps_conversation: bool) -> tuple[TurnTokens, TurnTokens | None]:
    """`default_tokens`, with the conversations' cache as the routing keeps it: each turn's history when
    `keeps_conversation` (PREFIX_AWARE with a per-conversation PrefixAwareId), else the system prompt only."""
    single, conversations = default_tokens(engine_budget)
    if keeps_conversation or conversations is None:
        return single, conversations
    raw = default_workload_raw()
    turns = without_affinity(simulated_turns(prompt_budget(raw, engine_budget)), int(raw["system_prompt_tokens"]))
    return single, tokens_of_turns(turns)


def engine_budget(cfg: EnvironmentConfig) -> int:
    """The container's prompt budget: max_model_len minus generation_reserve_tokens."""
    return cfg.engine.max_model_len - cfg.engine.generation_reserve_tokens


def engine_contexts(cfg: EnvironmentConfig) -> WorkloadContexts | None:
    """The default workload's contexts on this engine: prompts also within the container's budget
    (max_model_len minus generation_reserve_tokens), as `bin/loadtest` sends them to this environment."""
    return default_contexts(engine_budget(cfg))
