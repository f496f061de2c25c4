"""The default workload of `bin/loadtest`: conversations, sessions of turns, each turn sending the
conversation so far (docs/explanation/capacity-model.md "Conversations"). `ConversationWorkload` draws the sessions
(`SessionPlan`: adapter, turns, think times) and builds each turn's request, its history trimmed to the
prompt budget; `SessionSource` is the endless sessions a sweep draws in order, run by
capacity.conversation_step. A turn's adapter, system prompt and lengths are capacity.workload's
`Workload`. `load_workload` chooses among the kinds `--workload` names (`capture` is capacity.capture).

The conversation's distributions and the contexts they produce are config.domain.workload's (the VRAM check
and the physical ceiling read the same file), so the figure the check computes is the one this module sends.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from config.domain.workload import (
    WorkloadContexts,
    draw_answer,
    draw_lognormal,
    draw_turns,
    mean_turns,
    prompt_tokens,
    workload_contexts,
)
from container.serving.tokens import estimate_chat_tokens
from workbench.loadtest.session_plan import SessionPlan
from workbench.loadtest.under_way import SteadyState, steady_state
from workbench.loadtest.workload import DEFAULT_WORKLOAD, Workload, WorkloadError

KINDS = ("conversations", "single", "capture")  # --workload: one of these, `default` (conversations) or a file
# Three-letter words for conversations: " art" is 4 characters and one Llama-3 token, so the serving
# container's prompt estimate (4 characters a token, container/serving/tokens.py) counts N words as
# N tokens, the count the workload's lengths and the VRAM check use: a history trimmed to the budget
# by that estimate is as long as the budget says, never refused by the container's guard.
SHORT_WORDS = [
    "art",
    "fan",
    "day",
    "man",
    "way",
    "new",
    "big",
    "old",
    "end",
    "few",
    "top",
    "red",
    "fun",
    "run",
    "box",
    "set",
    "buy",
    "pay",
    "hot",
    "sun",
    "sky",
    "sea",
    "cat",
    "dog",
    "car",
    "war",
    "boy",
    "key",
    "map",
    "eye",
    "job",
    "age",
    "air",
    "arm",
    "bed",
    "cup",
    "cut",
    "egg",
    "far",
    "fit",
    "fly",
    "ice",
    "lot",
    "low",
    "mix",
    "net",
    "own",
    "pet",
    "put",
    "raw",
    "row",
    "sit",
    "six",
    "ten",
    "tea",
    "toy",
    "try",
    "win",
    "yes",
    "act",
    "add",
    "ago",
    "aid",
    "ask",
    "bag",
    "bar",
    "bus",
    "can",
    "cap",
]


def load_workload(choice: str) -> Workload | ConversationWorkload:
    """`conversations` (or `default`) and `single`: config/domain/workload.yaml's conversations or its single
    turns; else a workload file's path, conversations when it has a `conversation:` section.
    `capture` needs AWS (capacity.capture)."""
    if choice in ("conversations", "default"):
        return ConversationWorkload.load(DEFAULT_WORKLOAD)
    if choice == "single":
        return Workload.load(DEFAULT_WORKLOAD)
    path = Path(choice)
    try:
        raw = YAML(typ="safe").load(path.read_text())
    except (OSError, ValueError) as error:
        raise WorkloadError(
            f"--workload {choice!r}: neither {', '.join(KINDS)} nor a readable workload file ({error})"
        ) from None
    return ConversationWorkload.load(path) if isinstance(raw, dict) and "conversation" in raw else Workload.load(path)


@dataclass(frozen=True)
class Conversation:
    """config/domain/workload.yaml's `conversation:` section."""

    turns_mean: float
    turns_max: int
    think: tuple[float, float, float, float]  # median, sigma, min, max (seconds)
    context_budget_tokens: int

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Conversation:
        turns, think = raw["turns"], raw["think_seconds"]
        if turns.get("distribution", "geometric") != "geometric":
            raise ValueError(f"conversation.turns.distribution: only 'geometric', got {turns['distribution']!r}")
        return cls(
            turns_mean=float(turns["mean"]),
            turns_max=int(turns["max"]),
            think=(float(think["median"]), float(think["sigma"]), float(think["min"]), float(think["max"])),
            context_budget_tokens=int(raw["context_budget_tokens"]),
        )

    def problems(self, shortest_prompt: int) -> list[str]:
        found = []
        if not 1 <= self.turns_mean <= self.turns_max:
            found.append(
                f"conversation.turns: need 1 <= mean <= max, got mean {self.turns_mean:g}, max {self.turns_max}"
            )
        median, sigma, low, high = self.think
        if not 0 <= low <= median <= high or sigma < 0:
            found.append("conversation.think_seconds: need 0 <= min <= median <= max and sigma >= 0")
        if self.context_budget_tokens < shortest_prompt:
            found.append(
                f"conversation.context_budget_tokens: {self.context_budget_tokens} cannot hold the system prompt "
                f"and the longest user turn ({shortest_prompt} tokens with the chat framing)"
            )
        return found

    def turns_quantile(self, q: float) -> int:
        """The q-quantile of turns per session (geometric, capped)."""
        if self.turns_mean <= 1:
            return 1
        stay = 1 - 1 / self.turns_mean
        return min(self.turns_max, max(1, math.ceil(math.log(1 - q) / math.log(stay) - 1e-9)))


@dataclass(frozen=True)
class ConversationWorkload:
    """Sessions of turns (docs/explanation/capacity-model.md "Conversations"). Each turn sends the system prompt, the
    exchanges so far (user turns as sent, answers as received) and a new user turn, the oldest exchanges
    dropped whole while the prompt (as the container's guard estimates it) is over the budget."""

    turn: Workload  # adapters, system prompt, user turn and answer lengths
    conversation: Conversation
    raw: dict[str, Any] = field(compare=False, repr=False)
    lowered_from: int | None = None  # the file's budget, when `within` lowered it to an engine's

    @classmethod
    def load(cls, path: Path) -> ConversationWorkload:
        turn = Workload.load(path)
        try:
            raw = YAML(typ="safe").load(path.read_text())
            conversation = Conversation.parse(raw["conversation"])
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as error:
            raise WorkloadError(f"{path}: conversation: not usable ({type(error).__name__}: {error})") from None
        longest = prompt_tokens(turn.system_prompt_tokens, 0, 0, turn.user_turn_tokens[1])
        problems = conversation.problems(longest)
        if problems:
            raise WorkloadError(f"{path}: " + "; ".join(problems))
        return cls(turn, conversation, raw)

    @property
    def mean_turns(self) -> float:
        """Turns per session on average, after the cap: the offered rate's sessions are rate / this."""
        return mean_turns(self.conversation.turns_mean, self.conversation.turns_max)

    def within(self, prompt_budget: int) -> ConversationWorkload:
        """The same workload with its prompts also within an engine's budget (max_model_len minus
        generation_reserve_tokens): itself when the file's budget already is."""
        budget = self.conversation.context_budget_tokens
        if prompt_budget >= budget:
            return self
        raw = {**self.raw, "conversation": {**self.raw["conversation"], "context_budget_tokens": prompt_budget}}
        return replace(self, conversation=replace(self.conversation, context_budget_tokens=prompt_budget), raw=raw,
                       lowered_from=budget)  # fmt: skip

    @cached_property
    def system_prompt(self) -> str:
        return " ".join(SHORT_WORDS[i % len(SHORT_WORDS)] for i in range(self.turn.system_prompt_tokens))

    def sessions(self, seed: int = 0) -> Iterator[SessionPlan]:
        """Endless sessions; the same seed gives the same sequence."""
        rng = random.Random(seed)
        names, weights = list(self.turn.adapters), list(self.turn.adapters.values())
        answer = self.raw["answer_tokens"]
        median, sigma, low, high = self.conversation.think
        while True:
            count = draw_turns(rng, self.conversation.turns_mean, self.conversation.turns_max)
            turns = tuple(
                (" ".join(rng.choice(SHORT_WORDS) for _ in range(rng.randint(*self.turn.user_turn_tokens))),
                 draw_answer(rng, answer))
                for _ in range(count)
            )  # fmt: skip
            thinks = tuple(draw_lognormal(rng, median, sigma, low, high) for _ in range(count - 1))
            yield SessionPlan(rng.choices(names, weights)[0], turns, thinks)

    def source(self, seed: int = 0) -> SessionSource:
        """What a step runs: sessions (capacity.conversation_step.run_conversation_step)."""
        return SessionSource(self, self.sessions(seed))

    def request(self, plan: SessionPlan, history: list[dict[str, str]], index: int) -> tuple[dict[str, Any], bool]:
        """Turn `index` (0-based) of `plan` after `history` (user and assistant messages so far, in order):
        the body, and whether older exchanges were left out to fit the budget."""
        user, max_tokens = plan.turns[index]
        system = {"role": "system", "content": self.system_prompt}
        latest = {"role": "user", "content": user}
        kept = list(history)
        while kept and estimate_chat_tokens([system, *kept, latest]) > self.conversation.context_budget_tokens:
            del kept[:2]  # the oldest exchange: a user turn and its answer
        body = {
            "model": plan.adapter,
            "messages": [system, *kept, latest],
            "max_tokens": max_tokens,
            "ignore_eos": True,  # vLLM sampling parameter: generate exactly max_tokens
            "stream": True,
        }
        return body, len(kept) < len(history)

    @cached_property
    def contexts(self) -> WorkloadContexts:
        return workload_contexts(self.raw, self.conversation.context_budget_tokens)

    @cached_property
    def steady(self) -> SteadyState:
        c = self.conversation
        return steady_state(c.turns_mean, c.turns_max, c.think)

    @property
    def warmup_seconds(self) -> float:
        """The default warm-up of a step, which starts with a steady stream's sessions under way
        (capacity.under_way): the p90 of the time until one of them sends its next turn (think times
        only, simulated from the file), so that 90 % of them have resumed, prompts cached, by the window."""
        return self.steady.resume_seconds

    def history(self, plan: SessionPlan, turn: int) -> list[dict[str, str]]:
        """The exchanges before turn `turn` of a session under way at a step's start: its user turns as
        planned, each answer the plan's length in the workload's words (what the engine never saw)."""
        exchanges: list[dict[str, str]] = []
        for user, answer_tokens in plan.turns[:turn]:
            answer = " ".join(SHORT_WORDS[i % len(SHORT_WORDS)] for i in range(answer_tokens))
            exchanges += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
        return exchanges

    def describe(self) -> dict[str, Any]:
        c, contexts = self.conversation, self.contexts
        median, sigma, low, high = c.think
        return {
            **self.turn.describe(),
            "kind": "conversations",
            "conversation": {
                "turns": {"distribution": "geometric", "mean": c.turns_mean, "max": c.turns_max,
                          "mean_after_cap": round(self.mean_turns, 3), "p50": c.turns_quantile(0.5),
                          "p95": c.turns_quantile(0.95), "p99": c.turns_quantile(0.99)},
                "think_seconds": {"median": median, "sigma": sigma, "range": [low, high]},
                "context_budget_tokens": c.context_budget_tokens,
                **({"context_budget_lowered_from": self.lowered_from} if self.lowered_from else {}),
                "contexts": {"p95_tokens": contexts.p95_tokens, "mean_tokens": round(contexts.mean_tokens),
                             "p95_prompt_tokens": contexts.p95_prompt_tokens,
                             "trimmed_percent": round(contexts.trimmed_percent, 1)},
                "first_turn_share_percent": round(100 / self.mean_turns, 1),
                "default_warmup_seconds": self.warmup_seconds,
                "sessions_per_minute": "the offered requests/min divided by mean_after_cap",
                "next_turn": "sent think_seconds after the previous answer's last token (docs/how-to/measure-capacity.md)",
                "adapter": "one per session, drawn by the adapters' weights",
            },
        }  # fmt: skip


@dataclass(frozen=True)
class SessionSource:
    """A conversation workload and its endless sessions, drawn in order across the sweep's steps."""

    workload: ConversationWorkload
    plans: Iterator[SessionPlan]
