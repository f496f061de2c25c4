"""What `bin/loadtest` sends one request at a time: request bodies, each a streamed chat completion,
from a workload file (config/domain/workload.yaml: adapters mixed, prompt and answer lengths drawn) or from
captured traffic.

Two of the three kinds (capacity.conversations.load_workload chooses): `single` (independent turns,
`Workload`) and `capture` (`CapturedWorkload`, read by capacity.capture). The default, `conversations`,
is capacity.conversations: sessions whose turns carry the history so far, each turn's adapter, system
prompt and lengths those of this module's `Workload`.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from config.domain.workload import WORKLOAD_FILE

DEFAULT_WORKLOAD = WORKLOAD_FILE  # config owns the file: config/domain/workload.yaml
# Common one-token English words (each a single Llama-3 token with its leading space), so a text of N
# words is about N tokens for the real tokenizer, as the guards' estimate also assumes.
WORDS = [
    "manga",
    "anime",
    "story",
    "hero",
    "volume",
    "series",
    "read",
    "like",
    "new",
    "best",
    "great",
    "world",
    "time",
    "way",
    "day",
    "man",
    "life",
    "first",
    "good",
    "long",
    "little",
    "right",
    "old",
    "big",
    "high",
    "small",
    "large",
    "next",
    "early",
    "young",
    "important",
    "few",
    "public",
    "bad",
    "same",
    "able",
    "shop",
    "book",
    "price",
    "order",
    "ship",
    "store",
    "list",
    "genre",
    "art",
    "style",
    "fan",
    "page",
    "chapter",
    "end",
    "start",
    "action",
    "comedy",
    "drama",
    "school",
    "magic",
    "sport",
    "love",
    "friend",
    "team",
    "city",
    "night",
    "light",
    "dark",
    "fire",
    "water",
    "game",
    "power",
    "dream",
]


class WorkloadError(ValueError):
    """A workload file or capture that cannot be used; the message names the field or the file."""


@dataclass(frozen=True)
class Workload:
    name: str
    adapters: dict[str, float]
    system_prompt_tokens: int
    user_turn_tokens: tuple[int, int]
    answer_median: float
    answer_sigma: float
    answer_range: tuple[int, int]

    @classmethod
    def load(cls, path: Path) -> Workload:
        try:
            raw = YAML(typ="safe").load(path.read_text())
            answer = raw["answer_tokens"]
            workload = cls(
                name=str(path),
                adapters={str(k): float(v) for k, v in raw["adapters"].items()},
                system_prompt_tokens=int(raw["system_prompt_tokens"]),
                user_turn_tokens=(int(raw["user_turn_tokens"]["min"]), int(raw["user_turn_tokens"]["max"])),
                answer_median=float(answer["median"]),
                answer_sigma=float(answer["sigma"]),
                answer_range=(int(answer["min"]), int(answer["max"])),
            )
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as error:
            raise WorkloadError(
                f"{path}: not a workload file ({type(error).__name__}: {error}); see {DEFAULT_WORKLOAD}"
            ) from None
        problems = []
        if not workload.adapters or min(workload.adapters.values()) < 0 or sum(workload.adapters.values()) <= 0:
            problems.append("adapters: give at least one adapter with a positive weight")
        low, high = workload.user_turn_tokens
        if not 1 <= low <= high:
            problems.append(f"user_turn_tokens: need 1 <= min <= max, got {low}..{high}")
        low, high = workload.answer_range
        if not 1 <= low <= workload.answer_median <= high or workload.answer_sigma < 0:
            problems.append("answer_tokens: need 1 <= min <= median <= max and sigma >= 0")
        if problems:
            raise WorkloadError(f"{path}: " + "; ".join(problems))
        return workload

    def bodies(self, seed: int = 0) -> Iterator[dict[str, Any]]:
        """Endless request bodies; the same seed gives the same sequence."""
        rng = random.Random(seed)
        system = " ".join(WORDS[i % len(WORDS)] for i in range(self.system_prompt_tokens))
        names, weights = list(self.adapters), list(self.adapters.values())
        while True:
            user = " ".join(rng.choice(WORDS) for _ in range(rng.randint(*self.user_turn_tokens)))
            answer = round(math.exp(rng.gauss(math.log(self.answer_median), self.answer_sigma)))
            yield {
                "model": rng.choices(names, weights)[0],
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "max_tokens": min(max(answer, self.answer_range[0]), self.answer_range[1]),
                "ignore_eos": True,  # vLLM sampling parameter: generate exactly max_tokens
                "stream": True,
            }

    def source(self, seed: int = 0) -> Iterator[dict[str, Any]]:
        """What capacity.load sends: independent bodies."""
        return self.bodies(seed)

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.name,
            "kind": "single",
            "adapters": self.adapters,
            "system_prompt_tokens": self.system_prompt_tokens,
            "user_turn_tokens": list(self.user_turn_tokens),
            "answer_tokens": {
                "median": self.answer_median,
                "sigma": self.answer_sigma,
                "range": list(self.answer_range),
            },
        }


@dataclass(frozen=True)
class CapturedWorkload:
    """Request bodies replayed from data capture, in order, round and round; each made a stream."""

    name: str
    captured: tuple[dict[str, Any], ...]

    def bodies(self, seed: int = 0) -> Iterator[dict[str, Any]]:
        while True:
            for body in self.captured:
                yield {**body, "stream": True}

    def source(self, seed: int = 0) -> Iterator[dict[str, Any]]:
        return self.bodies(seed)

    def describe(self) -> dict[str, Any]:
        return {"source": self.name, "kind": "capture", "requests": len(self.captured)}


def replayable(body: Any) -> bool:
    return isinstance(body, dict) and ("messages" in body or "prompt" in body)


def json_body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
