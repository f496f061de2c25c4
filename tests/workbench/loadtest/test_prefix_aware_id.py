"""The load test sends a conversation's PrefixAwareId on every turn (config.routing: the client contract),
one per conversation, through the real botocore client (the header on the wire, no AWS)."""

from __future__ import annotations

import asyncio
import json
import random
import threading

import boto3
from botocore.awsrequest import AWSResponse

from config.routing import PREFIX_AWARE_ID_MAX_LENGTH
from workbench.loadtest.conversation_step import run_conversation_step
from workbench.loadtest.conversations import load_workload
from workbench.loadtest.load import StepSettings
from workbench.loadtest.targets import RequestRecord, VariantTarget

HEADER = "X-Amzn-SageMaker-Prefix-Aware-Id"


class Refusal:
    """A 400's body, as urllib3 would stream it."""

    def stream(self, *_args, **_kwargs):
        yield b'{"message": "refused by the test"}'


class Answering:
    instances = 1

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    async def request(self, body: bytes, record: RequestRecord, stop: threading.Event) -> None:
        import time

        record.sent = time.perf_counter()
        record.first, record.done, record.status = record.sent + 0.001, record.sent + 0.002, 200
        record.output_tokens, record.prompt_tokens = 5, len(json.loads(body)["messages"])
        record.answer = "an answer" if record.keep_answer else None
        self.records.append(record)


# Quick turns: short think times, so sessions reach their later turns within the step.
QUICK = """\
adapters: {manga_domain_v3: 1}
system_prompt_tokens: 8
user_turn_tokens: {min: 30, max: 40}
answer_tokens: {median: 5, sigma: 0, min: 5, max: 5}
conversation:
  turns: {distribution: geometric, mean: 4, max: 6}
  think_seconds: {median: 0.02, sigma: 0.1, min: 0.01, max: 0.03}
  context_budget_tokens: 10000
"""


def test_every_turn_of_a_conversation_carries_its_own_id_and_conversations_differ(tmp_path):
    (tmp_path / "quick.yaml").write_text(QUICK)
    target = Answering()
    _, records = asyncio.run(
        run_conversation_step(
            target, load_workload(str(tmp_path / "quick.yaml")).source(seed=2), StepSettings(6000, 0.5),
            threading.Event(), random.Random(1), lambda _: None,
        )
    )  # fmt: skip
    assert all(r.conversation and len(r.conversation) <= PREFIX_AWARE_ID_MAX_LENGTH for r in records)
    sessions: dict[str, list[int]] = {}
    for record in records:
        sessions.setdefault(record.conversation, []).append(record.turn)
    assert any(len(turns) > 1 for turns in sessions.values())  # later turns reuse the first turn's id
    assert all(turns == list(range(turns[0], turns[0] + len(turns))) for turns in sessions.values())
    assert len(sessions) > 1


def test_the_sagemaker_target_sends_the_id_as_the_runtime_header():
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    seen = []

    def capture(request, **_):
        seen.append(dict(request.headers))
        return AWSResponse(request.url, 400, {}, Refusal())

    client.meta.events.register("before-send.sagemaker-runtime.*", capture)
    target = VariantTarget(client, "dev", "endpoint", "primary", 1, {})
    record = RequestRecord(scheduled=0.0, conversation="conv-1")
    target._invoke(b"{}", record, threading.Event())
    single = RequestRecord(scheduled=0.0)
    target._invoke(b"{}", single, threading.Event())
    assert seen[0][HEADER] in (b"conv-1", "conv-1")
    assert HEADER not in seen[1]
