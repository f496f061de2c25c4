"""`bin/loadtest`'s conversation workload against the real vLLM engine, through the image's supervisor
and middleware: later turns carry the earlier turns and the answers the engine gave, and vLLM's own
prefix cache finds more of a conversation's prompts than of single turns'.

It runs before test_real_engine.py (file order), whose last test stops the shared container. The runs
go through the capacity library in this process (`workbench.loadtest.measure`, what `bin/loadtest --url`
calls) so that the test can read what was sent; the command's own flags are the stand-in tests'
(tests/workbench/loadtest/test_conversations.py)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from workbench.loadtest import MeasureSettings, measure
from workbench.loadtest.conversations import ConversationWorkload, load_workload
from workbench.loadtest.targets import RequestRecord, UrlTarget
from workbench.loadtest.workload import Workload

# Small enough for the CPU engine's max_model_len 2048 whatever the tiny model's tokenizer makes of the
# words (its 512-token vocabulary splits them): prompts within 600 tokens as the container's guard counts
# them, which six turns never reach. A system prompt shorter than the user turns, so that what a
# conversation reuses is its history, not the shared prompt every single turn reuses too. Short think
# times: the engine is slow, and the run is about the mechanism, not the seeds' users.
WORKLOAD = """\
adapters: {manga_domain_v3: 1, general_support_v2: 1, jp_style_v1: 1}
system_prompt_tokens: 12
user_turn_tokens: {min: 20, max: 30}
answer_tokens: {median: 16, sigma: 0, min: 16, max: 16}
conversation:
  turns: {distribution: geometric, mean: 4, max: 6}
  think_seconds: {median: 0.3, sigma: 0.5, min: 0.1, max: 1}
  context_budget_tokens: 600
"""
RATE = 120  # turns/min: about 2 a second, well within what the CPU engine serves


@dataclass
class Recording(UrlTarget):
    """The container at `url`, keeping every body sent with its record."""

    sent: list[tuple[dict, RequestRecord]] = field(default_factory=list)

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        await super().request(body, record, stop)
        self.sent.append((json.loads(body), record))


@pytest.fixture(scope="module")
def serving(containers):
    instance = containers["real-engine"]
    instance.wait_ready()
    return instance


def one_step(serving, workload, out: Path) -> tuple[dict, Recording]:
    """One 20 s step at RATE (after a 5 s warm-up for conversations), with an objective no step breaks."""
    target = Recording(str(serving.client.base_url))
    settings = MeasureSettings(
        slo_ttft_ms=60_000, step_seconds=20, max_minutes=3, start_rpm=RATE, max_rpm=RATE, max_send_lag_ms=2000,
        warmup_seconds=5, out=out,
    )  # fmt: skip
    measured = measure(target, workload, settings, say=print)
    return measured.record, target


def test_conversations_send_their_history_and_find_more_of_it_in_vllm_s_prefix_cache(serving, containers, tmp_path):
    path = tmp_path / "workload.yaml"
    path.write_text(WORKLOAD)
    conversations = load_workload(str(path))
    assert isinstance(conversations, ConversationWorkload)
    for instance in containers.values():
        instance.recorder.paused = True  # a /ping every 10 ms competes with the engine for the two cores
    try:
        single_record, _ = one_step(serving, Workload.load(path), tmp_path / "single")
        record, target = one_step(serving, conversations, tmp_path / "conversations")
    finally:
        for instance in containers.values():
            instance.recorder.paused = False
    single, step = single_record["steps"][0], record["steps"][0]
    print(
        f"\nsingle turns: TTFT p50 {single['ttft_p50_ms']} ms, p95 {single['ttft_p95_ms']} ms, prompt tokens p50 "
        f"{single['prompt_tokens_p50']}, prefix cache hits {single['prefix_cache_hit_percent']:.1f} %"
        f"\nconversations: TTFT p95 first turns {step['ttft_first_turn_p95_ms']} ms, later turns "
        f"{step['ttft_later_turns_p95_ms']} ms, prefix cache hits {step['prefix_cache_hit_percent']:.1f} %"
    )
    for group in step["by_turn"]:
        print(f"  turns {group['turns']}: {group}")
    assert single["errors"] == 0 and step["errors"] == 0 and step["warmup_requests"] > 0

    # What was sent: every later turn is the previous turn's prompt, the answer the engine streamed
    # for it, and a new user turn (nothing trimmed at these lengths).
    by_prompt = {json.dumps(body["messages"]): (body, sent) for body, sent in target.sent}
    # Sessions under way at the step's start (capacity.under_way) resume with a history the engine never saw.
    later = [(body, sent) for body, sent in target.sent if sent.turn > 1 and not sent.resumed]
    assert later and max(sent.turn for _, sent in later) >= 3 and not any(sent.trimmed for _, sent in later)
    for body, sent in later:
        previous_body, previous = by_prompt[json.dumps(body["messages"][:-2])]
        assert previous.turn == sent.turn - 1 and previous_body["model"] == body["model"]
        assert body["messages"][-2] == {"role": "assistant", "content": previous.answer} and previous.answer
        assert sent.prompt_tokens > previous.prompt_tokens

    # The report: per-turn figures and the engine's own prefix-cache counters over the step.
    first, *rest = step["by_turn"]
    assert first["turns"] == "1" and rest and all(g["prompt_tokens_p50"] > first["prompt_tokens_p50"] for g in rest)
    assert "## By turn at 120 requests/min per instance" in (tmp_path / "conversations" / "capacity.md").read_text()
    assert single["prefix_cache_hit_percent"] is not None
    assert step["prefix_cache_hit_percent"] > single["prefix_cache_hit_percent"]
