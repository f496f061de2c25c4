"""The chat bodies the serving benchmarks send (`short`: one question; `realistic`: a system prompt and 12
turns, about 3,000 prompt tokens, English and Japanese), shared by serving_overhead and layer_cpu."""

from __future__ import annotations

import json
import random

ENGLISH = (
    "I loved the art in the first volume but the pacing slowed down after the tournament arc, so I am "
    "looking for something with a tighter plot, found family themes and a bit of humour between the fights. "
)
JAPANESE = "次の巻はいつ発売されますか。作者の前作も読みたいので、おすすめの順番を教えてください。"


def chat_messages(kind: str) -> list[dict[str, str]]:
    """`short`: one question. `realistic`: system prompt plus 12 turns, about 3,000 prompt tokens."""
    if kind == "short":
        return [{"role": "user", "content": "Recommend a manga."}]
    rng = random.Random(13)
    system = "You are MangaAssist, a bookstore assistant for manga readers. Answer briefly and kindly. " * 4
    messages = [{"role": "system", "content": system}]
    for turn in range(12):
        words = ENGLISH.split()
        text = " ".join(rng.choice(words) for _ in range(150))
        messages.append({"role": "user" if turn % 2 == 0 else "assistant", "content": text + " " + JAPANESE})
    return messages


def request_body(kind: str, tokens: int) -> bytes:
    # ensure_ascii=False: UTF-8 on the wire, as JavaScript and most HTTP clients send it.
    return json.dumps(
        {"messages": chat_messages(kind), "max_tokens": tokens, "stream": True}, ensure_ascii=False
    ).encode()
