"""The conversation workload (`--workload conversations`, the default): what each turn sends, when it
is sent, what the report says of it, and the prefix cache it finds, against the stand-in engine behind
the serving middleware (standin/). The real engine's figures are tests/engine/test_conversation_capacity.py's."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from capacity_harness import start_engine

from container.serving.tokens import estimate_chat_tokens
from workbench.loadtest.conversation_step import run_conversation_step
from workbench.loadtest.conversations import ConversationWorkload, SessionPlan, SessionSource, load_workload
from workbench.loadtest.load import StepSettings, run_step
from workbench.loadtest.measurement import MeasureSettings, SettingsError
from workbench.loadtest.targets import RequestRecord, UrlTarget, answer_text
from workbench.loadtest.workload import Workload, WorkloadError

REPO = Path(__file__).resolve().parents[3]
# Differences of two time.monotonic() readings near the machine's uptime carry float rounding (0.02 s came out
# 0.01999999999998181 at ~1,914 s): a boundary on one is checked within this tolerance, never exactly.
CLOCK_TOLERANCE = 1e-6
# Short system prompt, long user turns, short answers: on the stand-in (which caches whole messages of
# earlier prompts, not generated answers) a conversation's later turns find far more cached than a
# single turn's shared system prompt.
CONVERSATIONS = """\
adapters: {manga_domain_v3: 1, general_support_v2: 1, jp_style_v1: 1}
system_prompt_tokens: 8
user_turn_tokens: {min: 30, max: 40}
answer_tokens: {median: 5, sigma: 0, min: 5, max: 5}
conversation:
  turns: {distribution: geometric, mean: 4, max: 6}
  think_seconds: {median: 0.05, sigma: 0.5, min: 0.02, max: 0.1}
  context_budget_tokens: 10000
"""


@pytest.fixture(scope="module")
def conversations(tmp_path_factory) -> ConversationWorkload:
    path = tmp_path_factory.mktemp("workload") / "conversations.yaml"
    path.write_text(CONVERSATIONS)
    workload = load_workload(str(path))
    assert isinstance(workload, ConversationWorkload)
    return workload


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    url, process = start_engine(tmp_path_factory.mktemp("conversations"), slots=32, token_interval=0.002)
    yield url
    process.stop()


@dataclass
class Recording(UrlTarget):
    """The container at `url`, keeping every body sent with its record."""

    sent: list[tuple[dict, RequestRecord]] = field(default_factory=list)

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        await super().request(body, record, stop)
        self.sent.append((json.loads(body), record))


def run_against(url: str, step) -> Recording:
    target = Recording(url)

    async def go() -> None:
        await target.open()
        try:
            await step(target)
        finally:
            await target.close()

    asyncio.run(go())
    return target


def conversation_step(source: SessionSource, rpm: float, warmup: float = 0.0):
    async def step(target: Recording):
        target.result = (
            await run_conversation_step(
                target,
                source,
                StepSettings(rpm, 3.0, warmup_seconds=warmup),
                threading.Event(),
                random.Random(5),
                lambda _: None,
            )
        )[0]

    return step


# --- what a turn sends --------------------------------------------------------------------------------


def test_every_later_turn_sends_the_earlier_turns_and_the_answers_received(engine, conversations):
    target = run_against(engine, conversation_step(conversations.source(seed=2), 600))
    by_prompt = {json.dumps(body["messages"]): (body, record) for body, record in target.sent}
    later = [(body, record) for body, record in target.sent if record.turn > 1]
    assert later and max(record.turn for _, record in later) >= 3
    for body, record in later:
        # The same conversation's previous turn: its prompt, then the answer it received, then this turn.
        previous_body, previous = by_prompt[json.dumps(body["messages"][:-2])]
        assert previous.turn == record.turn - 1 and previous_body["model"] == body["model"]  # one adapter
        assert body["messages"][-2] == {"role": "assistant", "content": previous.answer}
        assert previous.answer == "tok0 tok1 tok2 tok3 tok4 "  # what the stand-in streamed
        assert body["messages"][-1]["role"] == "user" and body["messages"][0]["role"] == "system"
        # Sent its think time (0.02..0.1 s) after the previous answer's last token, never before. Both are
        # monotonic readings near the machine's uptime: their difference carries rounding, so a tolerance.
        assert 0.02 - CLOCK_TOLERANCE <= record.scheduled - previous.done <= 0.1 + CLOCK_TOLERANCE
        assert record.prompt_tokens > previous.prompt_tokens
    assert all(record.ok and record.turn is not None for _, record in target.sent)


def test_the_oldest_exchanges_are_dropped_whole_to_fit_the_prompt_budget(conversations):
    small = conversations.within(200)
    assert small.conversation.context_budget_tokens == 200 and small.lowered_from == 10000
    plan = SessionPlan("jp_style_v1", tuple(("art fan day " * 12, 5) for _ in range(6)), (0.1,) * 5)
    history: list[dict[str, str]] = []
    for index in range(5):
        history += [{"role": "user", "content": plan.turns[index][0]}, {"role": "assistant", "content": "tok0 tok1"}]
    body, trimmed = small.request(plan, history, 5)
    messages = body["messages"]
    assert trimmed and estimate_chat_tokens(messages) <= 200
    kept = messages[1:-1]
    assert kept == history[len(history) - len(kept) :] and len(kept) % 2 == 0 and kept[0]["role"] == "user"
    assert estimate_chat_tokens([messages[0], *history[len(history) - len(kept) - 2 :], messages[-1]]) > 200
    short, trimmed = small.request(plan, history[:2], 1)  # one exchange fits: all of it is sent
    assert not trimmed and short["messages"] == [
        messages[0],
        *history[:2],
        {"role": "user", "content": plan.turns[1][0]},
    ]


def test_conversation_text_is_counted_by_the_guard_as_the_workload_counts_it(conversations):
    plan = next(conversations.sessions(seed=1))
    body, _ = conversations.request(plan, [], 0)
    words = len(body["messages"][0]["content"].split()) + len(body["messages"][1]["content"].split())
    # The guard's estimate: the words, plus its framing (5 a message, 5 a prompt): one token a word.
    assert estimate_chat_tokens(body["messages"]) == words + 2 * 5 + 5


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ("turns: {distribution: zipf, mean: 4, max: 6}", "only 'geometric'"),
        ("turns: {mean: 9, max: 6}", "need 1 <= mean <= max, got mean 9, max 6"),
        ("think_seconds: {median: 1, sigma: 0.5, min: 2, max: 3}", "conversation.think_seconds: need 0 <= min"),
        ("context_budget_tokens: 40", "context_budget_tokens: 40 cannot hold the system prompt and the longest"),
    ],
)
def test_a_bad_conversation_section_names_its_field(tmp_path, section, says):
    key = section.split(":")[0]
    lines = [line for line in CONVERSATIONS.splitlines() if not line.strip().startswith(f"{key}:")]
    path = tmp_path / "bad.yaml"
    path.write_text("\n".join(lines) + f"\n  {section}\n")
    with pytest.raises(WorkloadError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_workload(str(path))


def test_workload_names_and_files(tmp_path):
    assert isinstance(load_workload("conversations"), ConversationWorkload)
    assert isinstance(load_workload("default"), ConversationWorkload)
    assert type(load_workload("single")) is Workload
    with pytest.raises(WorkloadError, match="neither conversations, single, capture nor a readable workload file"):
        load_workload(str(tmp_path / "missing.yaml"))


# --- when turns are sent --------------------------------------------------------------------------------


@dataclass
class Instant:
    """Answers every request 3 ms after it is sent, with a text naming its turn."""

    instances: int = 1
    records: list[RequestRecord] = field(default_factory=list)

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        record.sent = time.perf_counter()
        record.first, record.done, record.status = record.sent + 0.001, record.sent + 0.003, 200
        record.output_tokens, record.prompt_tokens = 5, len(json.loads(body)["messages"])
        record.answer = f"answer to turn {record.turn}" if record.keep_answer else None
        self.records.append(record)


def test_a_step_warms_up_unmeasured_counts_only_its_window_and_sends_nothing_after_it(conversations):
    target = Instant()
    step, records = asyncio.run(
        run_conversation_step(
            target,
            conversations.source(seed=3),
            StepSettings(3000, 1.0, warmup_seconds=1.0),
            threading.Event(),
            random.Random(1),
            lambda _: None,
        )
    )
    window = min(r.scheduled for r in records if r.counted)
    warm = [r for r in records if not r.counted]
    assert warm and all(r.scheduled < window for r in warm)
    assert step.requests == len(records) - len(warm) and step.warmup_requests == len(warm)
    assert step.warmup_seconds == 1.0 and max(r.scheduled for r in records) < window + 1.0 + CLOCK_TOLERANCE
    # Later turns in the window belong to sessions begun in the warm-up too: a steady stream's mix.
    assert any(r.turn > 1 for r in records if r.counted and r.scheduled - window < 0.1)
    groups = {group["turns"]: group for group in step.by_turn}
    assert groups["1"]["requests"] == sum(1 for r in records if r.counted and r.turn == 1)
    assert step.ttft_first_turn_p95_ms is not None and step.ttft_later_turns_p95_ms is not None


def test_a_warmed_up_step_starts_with_a_steady_stream_s_sessions_under_way(engine, tmp_path):
    """workbench.loadtest.under_way: sessions begun before the step resume at the turn they reached, with their
    earlier exchanges as the workload writes them; their next turns carry what the engine answered."""
    path = tmp_path / "slower.yaml"  # think times of 0.2-1 s: sessions last long enough to be under way
    path.write_text(
        CONVERSATIONS.replace(
            "{median: 0.05, sigma: 0.5, min: 0.02, max: 0.1}", "{median: 0.5, sigma: 0.5, min: 0.2, max: 1}"
        )
    )
    slower = load_workload(str(path))
    assert isinstance(slower, ConversationWorkload)
    target = run_against(engine, conversation_step(slower.source(seed=4), 1200, warmup=1.0))
    resumed = [(body, record) for body, record in target.sent if record.resumed]
    assert resumed and all(record.turn > 1 for _, record in resumed)
    for body, record in resumed:
        history = body["messages"][1:-1]  # between the system prompt and the new user turn
        assert len(history) == 2 * (record.turn - 1)  # nothing trimmed at these lengths
        assert all(m["role"] == "assistant" and len(m["content"].split()) == 5 for m in history[1::2])
    # Resumed first, the same session's next turn then carries the answer the engine streamed for it.
    by_prompt = {json.dumps(body["messages"]): record for body, record in target.sent}
    followed = [
        (body, record)
        for body, record in target.sent
        if not record.resumed and record.turn > 1 and json.dumps(body["messages"][:-2]) in by_prompt
        and by_prompt[json.dumps(body["messages"][:-2])].resumed
    ]  # fmt: skip
    assert followed
    for body, _ in followed:
        assert body["messages"][-2]["content"] == "tok0 tok1 tok2 tok3 tok4 "  # what the stand-in streamed


def test_the_default_warm_up_is_the_p90_of_the_time_until_a_session_under_way_resumes():
    workload = load_workload("conversations")
    assert isinstance(workload, ConversationWorkload)
    steady = workload.steady
    assert workload.warmup_seconds == steady.resume_seconds
    median, _, low, high = workload.conversation.think
    # A session open at a random moment waits part of one think time: below the longest, above nothing,
    # and its p90 well beyond the median think time's half.
    assert median / 2 < steady.resume_seconds < high
    assert steady.horizon_seconds > steady.resume_seconds


def test_a_failed_turn_ends_its_session():
    class Failing(Instant):
        async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
            await super().request(body, record, stop)
            record.status, record.error = 500, "HTTP 500"

    target = Failing()
    workload = load_workload("conversations")
    asyncio.run(
        run_conversation_step(
            target, workload.source(), StepSettings(3000, 0.5), threading.Event(), random.Random(1), lambda _: None
        )
    )
    assert target.records and all(r.turn == 1 for r in target.records)


# --- the prefix cache ------------------------------------------------------------------------------------


def test_a_conversation_step_finds_more_of_its_prompts_cached_than_single_turns(engine, conversations):
    single = run_against(
        engine,
        lambda target: _single(target, conversations.turn),
    ).result
    conversation = run_against(engine, conversation_step(conversations.source(seed=4), 600)).result
    print(f"\nprefix cache hits: single turns {single.prefix_cache_hit_percent:.0f} %, "
          f"conversations {conversation.prefix_cache_hit_percent:.0f} %")  # fmt: skip
    assert single.prefix_cache_hit_percent is not None and single.ttft_first_turn_p95_ms is None
    assert conversation.prefix_cache_hit_percent > single.prefix_cache_hit_percent
    later = [group for group in conversation.by_turn if group["turns"] != "1"]
    first = conversation.by_turn[0]
    assert first["turns"] == "1" and later and all(g["prompt_tokens_p50"] > first["prompt_tokens_p50"] for g in later)


async def _single(target: Recording, workload: Workload) -> None:
    target.result = (
        await run_step(
            target, workload.bodies(seed=1), StepSettings(600, 3.0), threading.Event(), random.Random(2), lambda _: None
        )
    )[0]


def test_an_answer_is_read_back_from_its_stream():
    stream = (
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2}}\n\ndata: [DONE]\n\n'
    )
    record = RequestRecord(scheduled=0.0, keep_answer=True)
    record.finish(stream, stream)
    assert (record.answer, record.prompt_tokens, record.output_tokens) == ("Hello", 12, 2)
    assert answer_text(b'data: {"choices":[{"index":0,"text":"a completion"}]}\n\n') == "a completion"


# --- the command and its report -----------------------------------------------------------------------


@pytest.mark.parametrize("workload", [None, "single"])
def test_the_command_measures_conversations_by_default_and_single_turns_on_request(engine, tmp_path, workload):
    out = tmp_path / "out"
    chosen = [] if workload is None else ["--workload", workload]
    run = subprocess.run(
        # The report's shape, not the generator (workbench/benchmarks/capacity_generator.py): a steady stream's long
        # conversations from the first second (capacity.under_way) at a rate this shared machine sends on time.
        [sys.executable, "-m", "workbench.loadtest", "--url", engine, "--slo-ttft-ms", "60000", "--step-seconds", "3",
         "--start-rpm", "600", "--max-rpm", "600", "--warmup-seconds", "1", "--max-send-lag-ms", "1000",
         "--out", str(out), *chosen],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((out / "capacity.json").read_text())
    markdown = (out / "capacity.md").read_text()
    step = record["steps"][0]
    if workload is None:
        conversation = record["workload"]["conversation"]
        assert record["workload"]["kind"] == "conversations" and record["settings"]["warmup_seconds"] == 1
        assert conversation["turns"] == {"distribution": "geometric", "mean": 4.2, "max": 35, "mean_after_cap": 4.2,
                                         "p50": 3, "p95": 12, "p99": 17}  # fmt: skip
        assert conversation["think_seconds"] == {"median": 10, "sigma": 0.7, "range": [2, 120]}
        assert conversation["context_budget_tokens"] == 3496 and conversation["contexts"]["p95_tokens"] > 3496
        assert step["by_turn"][0]["turns"] == "1" and step["prefix_cache_hit_percent"] is not None
        assert "## By turn at 600 requests/min per instance" in markdown and "- conversations: 4.2 turns" in markdown
        assert "after 1 s of warm-up" in run.stdout
    else:
        assert record["workload"]["kind"] == "single" and record["settings"]["warmup_seconds"] == 0
        assert step["by_turn"] is None and step["warmup_requests"] == 0
        assert "## By turn" not in markdown and "warm-up" not in run.stdout
    assert step["prompt_tokens_p95"] > 0


def test_a_time_budget_without_room_for_the_shortest_search_is_refused_before_the_sweep():
    settings = MeasureSettings(slo_ttft_ms=500, step_seconds=60, max_minutes=5)
    with pytest.raises(SettingsError, match=r"--max-minutes 5 cannot give an answer: .* 4 x \(106 s warm-up \+ 60 s\)"):
        settings.sweep_settings(106)
    assert settings.sweep_settings(None).warmup_seconds == 0  # single turns: no warm-up
    assert MeasureSettings(500, 60, 5, warmup_seconds=0).sweep_settings(106).warmup_seconds == 0
