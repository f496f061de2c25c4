"""What the sweep sends: the default workload's shape, a bad workload file, and captured traffic read
from S3 (moto) in SageMaker's data-capture format."""

from __future__ import annotations

import base64
import json
import statistics
from collections import Counter

import boto3
import pytest
from moto import mock_aws

from config import load_environment
from workbench.loadtest.capture import capture_record, captured_workload, request_body
from workbench.loadtest.workload import DEFAULT_WORKLOAD, Workload, WorkloadError


def test_default_workload_mixes_the_configured_adapters_and_follows_the_seeds_lengths():
    workload = Workload.load(DEFAULT_WORKLOAD)
    assert set(workload.adapters) == set(load_environment("prod").engine.adapters)
    bodies = [body for body, _ in zip(workload.bodies(seed=3), range(3000), strict=False)]
    counts = Counter(body["model"] for body in bodies)
    assert all(900 <= n <= 1100 for n in counts.values()), counts
    assert all(body["stream"] is True and body["ignore_eos"] is True for body in bodies)
    system = {body["messages"][0]["content"] for body in bodies}
    assert len(system) == 1 and len(next(iter(system)).split()) == 400  # one shared prefix
    assert min(len(b["messages"][1]["content"].split()) for b in bodies) >= 150
    assert statistics.median(body["max_tokens"] for body in bodies) == pytest.approx(180, rel=0.05)
    assert [b["max_tokens"] for b, _ in zip(workload.bodies(seed=3), range(5), strict=False)] == [
        b["max_tokens"] for b in bodies[:5]
    ]


def test_a_bad_workload_file_names_the_problem(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("adapters: {a: 1}\nsystem_prompt_tokens: 10\nuser_turn_tokens: {min: 5, max: 2}\n"
                    "answer_tokens: {median: 10, sigma: 0, min: 1, max: 20}\n")  # fmt: skip
    with pytest.raises(WorkloadError, match="user_turn_tokens: need 1 <= min <= max, got 5..2"):
        Workload.load(path)
    path.write_text("just text")
    with pytest.raises(WorkloadError, match="not a workload file"):
        Workload.load(path)


CHAT = {"model": "jp_style_v1", "messages": [{"role": "user", "content": "おすすめの漫画は?"}], "max_tokens": 50}


@pytest.mark.parametrize("encoding", ["JSON", "BASE64"])
def test_a_capture_record_gives_back_its_request_body(encoding):
    record = json.loads(capture_record(CHAT, encoding))
    assert record["captureData"]["endpointInput"]["encoding"] == encoding
    assert request_body(record) == CHAT


def test_records_without_a_replayable_body_are_skipped():
    broken = {"captureData": {"endpointInput": {"data": "not base64!", "encoding": "BASE64"}}}
    assert request_body(broken) is None
    assert request_body({"captureData": {}}) is None


@mock_aws
def test_captured_workload_reads_the_variants_capture_files_from_s3():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="capture-bucket")
    prefix = "capture/mangaassist-llm-staging/canary/2026/11/25/03"
    lines = [capture_record({**CHAT, "max_tokens": n}, "BASE64" if n % 2 else "JSON") for n in (10, 11, 12)]
    lines.append(
        json.dumps(
            {"captureData": {"endpointInput": {"data": base64.b64encode(b"[1]").decode(), "encoding": "BASE64"}}}
        )
    )
    s3.put_object(Bucket="capture-bucket", Key=f"{prefix}/12-00-000-aaaa.jsonl", Body="\n".join(lines).encode())
    s3.put_object(Bucket="capture-bucket", Key="capture/mangaassist-llm-staging/primary/2026/11/25/03/x.jsonl",
                  Body=capture_record({**CHAT, "max_tokens": 99}).encode())  # fmt: skip
    workload = captured_workload(s3, "s3://capture-bucket/capture/", "mangaassist-llm-staging", "canary")
    bodies = [body for body, _ in zip(workload.bodies(), range(4), strict=False)]
    assert [b["max_tokens"] for b in bodies] == [10, 11, 12, 10]  # in order, round and round; primary's not
    assert all(b["stream"] is True for b in bodies)
    assert "3 requests, 1 skipped" in workload.describe()["source"]
    with pytest.raises(WorkloadError, match="no replayable request"):
        captured_workload(s3, "s3://capture-bucket/capture", "mangaassist-llm-staging", "nobody")
