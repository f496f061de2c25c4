"""The stand-in engine answers like vLLM 0.33.0 where the serving layer depends on it (sources cited
in workbench/standin/engine.py's docstring): without our middleware, these are vLLM's own routes and status codes."""

import json

import httpx
import pytest

from container.serving.prometheus import Exposition
from workbench.standin.harness import (
    ADAPTERS,
    PATIENCE_SECONDS,
    chat_body,
    free_port,
    serving_env,
    start_standin,
    wait_for_listening,
)


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("standin")
    port = free_port()
    env = serving_env(workdir, port, STANDIN_STARTUP_DELAY="0")
    process = start_standin(workdir, env, port, middleware=False)
    wait_for_listening(port, process)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE_SECONDS) as client:
        yield client
    process.stop()


@pytest.mark.parametrize(("method", "path"), [("GET", "/health"), ("GET", "/ping"), ("POST", "/ping")])
def test_health_and_ping_are_200_with_an_empty_body(vllm, method, path):
    response = vllm.request(method, path)
    assert response.status_code == 200 and response.content == b""


def test_invocations_need_json_content_type(vllm):
    response = vllm.post("/invocations", content=json.dumps(chat_body()), headers={"Content-Type": "text/plain"})
    assert response.status_code == 400 and "Unsupported Media Type" in response.json()["error"]["message"]


def test_invocations_reject_bad_json_and_unroutable_bodies(vllm):
    bad = vllm.post("/invocations", content=b"{oops", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and "JSON decode error" in bad.json()["error"]["message"]
    neither = vllm.post("/invocations", json={"max_tokens": 3})
    assert neither.status_code == 400 and "Cannot find suitable handler" in neither.json()["error"]["message"]


def test_the_sagemaker_adapter_header_becomes_the_model(vllm):
    response = vllm.post("/invocations", json=chat_body(), headers={"X-Amzn-SageMaker-Adapter-Identifier": ADAPTERS[1]})
    assert response.status_code == 200 and response.json()["model"] == ADAPTERS[1]


def test_invocations_replace_the_body_model_with_the_header_as_vllm_does(vllm):
    """inject_adapter_id's replace mode, seen with the real engine (tests/engine): the first header wins,
    and without a header `model` becomes null, so a body naming an adapter gets the base model."""
    header = "X-Amzn-SageMaker-Adapter-Identifier"
    body_only = vllm.post("/invocations", json=chat_body(model=ADAPTERS[1]))
    assert body_only.status_code == 200 and body_only.json()["model"] == "base"
    twice = vllm.post("/invocations", json=chat_body(), headers=[(header, ADAPTERS[2]), (header, ADAPTERS[0])])
    assert twice.json()["model"] == ADAPTERS[2]
    empty = vllm.post("/invocations", json=chat_body(model=ADAPTERS[1]), headers={header: ""})
    assert empty.json()["model"] == "base"


def test_v1_routes_ignore_the_adapter_header_as_vllm_does(vllm):
    headers = {"X-Amzn-SageMaker-Adapter-Identifier": ADAPTERS[2]}
    assert vllm.post("/v1/chat/completions", json=chat_body(), headers=headers).json()["model"] == "base"
    served = vllm.post("/v1/chat/completions", json=chat_body(model=ADAPTERS[0]), headers=headers).json()["model"]
    assert served == ADAPTERS[0]


def test_an_unknown_model_is_vllms_404_not_found(vllm):
    """Our middleware turns this into a 400 listing the adapters; bare vLLM says 404."""
    error = vllm.post("/v1/chat/completions", json=chat_body(model="nope")).json()["error"]
    assert error["code"] == 404 and error["type"] == "NotFoundError" and error["param"] == "model"


def test_streams_end_with_a_usage_and_metrics_chunk_then_done(vllm):
    with vllm.stream("POST", "/v1/chat/completions", json=chat_body(stream=True, max_tokens=4)) as response:
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events[-1] == "[DONE]"
    final = json.loads(events[-2])
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 4
    assert set(final["metrics"]) >= {"queue_time_ms", "time_to_first_token_ms"}
    assert json.loads(events[0])["choices"][0]["delta"]["role"] == "assistant"


def test_metrics_use_vllms_names_labels_and_histogram_buckets(vllm):
    vllm.post("/v1/completions", json={"prompt": "Once upon a time", "max_tokens": 2})
    text = vllm.get("/metrics").text
    parsed = Exposition(text)
    for name in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:num_preemptions_total",
        "vllm:generation_tokens_total",
    ):
        assert parsed.total(name) is not None, name
    labels = parsed.samples["vllm:num_requests_running"][0][0]
    assert labels == {"engine": "0", "model_name": "base"}
    assert parsed.buckets("vllm:time_to_first_token_seconds")[float("inf")] >= 1
    assert "vllm:gpu_cache_usage_perc" not in text  # the seeds' name, gone from vLLM
