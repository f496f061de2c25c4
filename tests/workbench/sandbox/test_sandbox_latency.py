"""The canary guard's latency verdict end to end in the sandbox: real streamed invocations through the
runtime front to each variant's model server (the serving image's middleware in front of the vLLM
stand-in), the middleware's per-request EMF arrays forwarded into the sandbox's CloudWatch, percentile
statistics computed there, and a canary made slow by its own model server, not by editing the
guard's input."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest

from container.serving import contract
from tests.workbench.sandbox.test_sandbox_day_two import REPO, running_sandbox  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # a long end-to-end run: `make test-slow` (CI runs it)

ENDPOINT = "mangaassist-llm-prod"
STREAMS = 30


def stream(runtime, variant: str) -> str:
    body = {"messages": [{"role": "user", "content": "Recommend a manga."}], "max_tokens": 8, "stream": True}
    answer = runtime.invoke_endpoint_with_response_stream(
        EndpointName=ENDPOINT, Body=json.dumps(body), ContentType="application/json", TargetVariant=variant
    )
    return b"".join(event["PayloadPart"]["Bytes"] for event in answer["Body"] if "PayloadPart" in event).decode()


def serve(runtime, variant: str, count: int = STREAMS) -> None:
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: stream(runtime, variant), range(count)))
    assert all("data: [DONE]" in answer for answer in answers)


def first_token_count(cloudwatch, variant: str) -> float:
    result = cloudwatch.get_metric_statistics(
        Namespace=contract.METRIC_NAMESPACE,
        MetricName=contract.METRIC_TIME_TO_FIRST_TOKEN,
        Dimensions=[{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "VariantName", "Value": variant}],
        StartTime=time.time() - 600,
        EndTime=time.time() + 60,
        Period=60,
        Statistics=["SampleCount"],
    )
    return sum(point["SampleCount"] for point in result["Datapoints"])


def wait_for_first_tokens(cloudwatch, expected: dict[str, int]) -> None:
    deadline = time.monotonic() + 30
    while any(first_token_count(cloudwatch, v) < n for v, n in expected.items()):
        assert time.monotonic() < deadline, {v: first_token_count(cloudwatch, v) for v in expected}
        time.sleep(0.3)


def test_a_canary_made_slow_by_its_model_server_is_refused_by_the_shift_guard(running_sandbox, cli):  # noqa: F811
    exports, state_dir, _ = running_sandbox
    session = boto3.Session(region_name=exports["AWS_REGION"])
    runtime, cloudwatch = session.client("sagemaker-runtime"), session.client("cloudwatch")
    guard = ("--min-canary-invocations", str(STREAMS))

    serve(runtime, "primary")
    serve(runtime, "canary")
    wait_for_first_tokens(cloudwatch, {"primary": STREAMS, "canary": STREAMS})
    healthy = cli("shift", "prod", "--canary-weight", "10", *guard)
    assert healthy.exit_code == 0, healthy.output
    assert "TTFT p95 canary" in healthy.output

    slow = subprocess.run(
        [sys.executable, "-m", "workbench.sandbox", "model", "canary", "slow", "prod", "--prefill-seconds", "0.5",
         "--state-dir", str(state_dir)],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert slow.returncode == 0, slow.stderr
    serve(runtime, "canary")
    wait_for_first_tokens(cloudwatch, {"canary": 2 * STREAMS})

    refused = cli("shift", "prod", "--canary-weight", "20", *guard)
    assert refused.exit_code == 4, refused.output
    assert "canary time to first token p95" in refused.stderr and "above the primary's" in refused.stderr
    canary_ms = int(refused.stderr.split("canary time to first token p95 ")[1].split(" ms")[0])
    assert canary_ms >= 500  # every slow stream waited 0.5 s before its first byte
    status = cli("status", "prod")
    assert status.exit_code == 0, status.output
    canary_row = next(line for line in status.output.splitlines() if line.strip().startswith("canary"))
    assert f"({2 * STREAMS} streams)" in canary_row
