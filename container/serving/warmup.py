"""Phase 4: warm the engine through the same path SageMaker uses before /ping says ready.

Every adapter is exercised (a broken adapter fails the start, not a customer request), the base
model too, and one request continues an earlier conversation so the prefix cache is primed and its
hit path exercised. Streamed and non-streamed requests alternate so both response paths are warm.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .guards import ADAPTER_HEADER, INVOCATIONS_PATH
from .loopback import LoopbackClient
from .middleware import WARMUP_HEADER

MAX_TOKENS = 16
# Shaped like the chatbot's real prompts: a long shared system prompt, then the conversation.
SYSTEM_PROMPT = (
    "You are MangaAssist, a shopping assistant for a manga store. Recommend series and volumes from the "
    "catalog, answer questions about orders, shipping and returns, and keep answers short and friendly. "
    "When the customer writes in Japanese, answer in natural Japanese. Never invent prices or stock levels. "
) * 4
FIRST_TURN = "Recommend an action manga for someone who loved Fullmetal Alchemist."
FOLLOW_UP = "Which of those has finished its run?"
FILLER_TURNS = ("What is the return policy for damaged volumes?", "おすすめの少年漫画を教えてください。")


@dataclass(frozen=True)
class WarmupRequest:
    label: str
    adapter: str | None  # None: the base model
    messages: list[dict[str, str]]
    stream: bool

    def body(self) -> dict[str, Any]:
        return {"messages": self.messages, "max_tokens": MAX_TOKENS, "temperature": 0, "stream": self.stream}


@dataclass
class WarmupReport:
    requests: int = 0
    by_label: dict[str, int] = field(default_factory=dict)


class WarmupFailed(RuntimeError):
    pass


def _conversation(*user_turns: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    for index, turn in enumerate(user_turns):
        if index:
            messages.append({"role": "assistant", "content": "Here are three series you might enjoy."})
        messages.append({"role": "user", "content": turn})
    return messages


def warmup_plan(adapters: tuple[str, ...], count: int) -> list[WarmupRequest]:
    """At least one request per adapter, one to the base model and one shared-prefix continuation;
    `count` above that adds requests round-robin over the adapters. A count of 0 disables warmup."""
    if count == 0:
        return []
    plan = [WarmupRequest(f"adapter:{name}", name, _conversation(FIRST_TURN), False) for name in adapters]
    plan.append(WarmupRequest("base", None, _conversation(FIRST_TURN), True))
    plan.append(WarmupRequest("shared-prefix", adapters[0], _conversation(FIRST_TURN, FOLLOW_UP), True))
    for index in range(max(0, count - len(plan))):
        turn = FILLER_TURNS[index % len(FILLER_TURNS)]
        adapter = adapters[index % len(adapters)]
        plan.append(WarmupRequest(f"adapter:{adapter}", adapter, _conversation(turn), index % 2 == 0))
    return plan


async def run_warmup(client: LoopbackClient, plan: list[WarmupRequest], request_timeout: float) -> WarmupReport:
    """Sends the plan in order; raises WarmupFailed (or LoopbackError) at the first bad answer."""
    report = WarmupReport()
    for request in plan:
        headers = {WARMUP_HEADER: "1"}
        if request.adapter is not None:
            headers[ADAPTER_HEADER] = request.adapter
        response = await client.post_json(INVOCATIONS_PATH, request.body(), headers, request_timeout)
        if not _answered(request, response.status, response.text):
            raise WarmupFailed(f"{request.label}: HTTP {response.status}: {response.text[-500:]}")
        report.requests += 1
        report.by_label[request.label] = report.by_label.get(request.label, 0) + 1
    return report


def _answered(request: WarmupRequest, status: int, text: str) -> bool:
    if status != 200:
        return False
    if request.stream:
        return "data: [DONE]" in text and 'data: {"error"' not in text
    try:
        return "choices" in json.loads(text)
    except ValueError:
        return False
