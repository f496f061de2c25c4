"""The supervisor and middleware on the real vLLM engine: readiness, adapter routing, guards, streaming,
request logs, metrics and SIGTERM. One container for the module (vLLM takes a while to start); the
last test drains and stops it. Engine death has its own container (test_engine_death.py)."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from emf_check import emf_problems
from engine_harness import (
    ADAPTER_HEADER,
    REQUEST_TIMEOUT_SECONDS,
    START_PATIENCE_SECONDS,
    Serving,
    chat,
    sse_events,
    stream_in_thread,
)

from container.serving import contract as c
from container.serving.metrics import (
    VLLM_KV_CACHE_USAGE,
    VLLM_PREEMPTIONS,
    VLLM_PREFIX_HITS,
    VLLM_PREFIX_QUERIES,
    VLLM_QUEUE_TIME,
    VLLM_RUNNING,
    VLLM_WAITING,
)
from container.serving.prometheus import Exposition
from container.serving.supervisor import EXIT_OK
from container.serving.tokens import estimate_chat_tokens
from workbench.standin.harness import ADAPTERS, wait_until

MODELS = ("base", *ADAPTERS)
REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
# Routes and ways of naming the model; each must be served by the model named.
WAYS = ("/v1/chat/completions with model", "/invocations with the header", "/invocations with model")


@pytest.fixture(scope="module")
def serving(containers):
    instance = containers["real-engine"]
    instance.wait_ready()
    return instance


def post(serving: Serving, path: str, body: dict, request_id: str, headers: dict | None = None) -> httpx.Response:
    return serving.client.post(path, json=body, headers={**(headers or {}), "X-Request-Id": request_id})


def content(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def test_ready_only_after_warmup_through_every_adapter(serving):
    # The fixture saw /ping say 200 with its own request; the recorder's thread may poll a moment later.
    wait_until(lambda: 200 in serving.recorder.statuses(), "the /ping recorder to see 200")
    statuses = serving.recorder.statuses()
    print(f"\n/ping polls unanswered within 2 s (busy machine, not counted as a status): {serving.recorder.timeouts()}")
    # Refused while vLLM loads the model, 503 while starting and warming up, then 200 for good.
    assert statuses[0] is None and statuses.index(503) < statuses.index(200)
    assert 200 not in statuses[: statuses.index(200)] and set(statuses[statuses.index(200) :]) == {200}
    events = serving.process.json_lines()
    order = [(e.get("event"), e.get("phase") or e.get("state")) for e in events if e.get("component") == "supervisor"]
    assert order.index(("phase_finished", "warmup")) < order.index(("state", "ready"))
    warmup = next(e for e in serving.process.events("phase_finished") if e["phase"] == "warmup")
    assert warmup["status"] == "ok"
    assert {f"adapter:{name}" for name in ADAPTERS} | {"base", "shared-prefix"} <= set(warmup["by_label"])

    def warmup_lines() -> list[dict]:
        """Every model's line: the log file is read while the process still writes it (one failed fresh-clone
        run saw two of four lines just after the warmup summary)."""
        lines = [e for e in serving.process.events("request") if e["warmup"]]
        return lines if {line["adapter"] for line in lines} >= set(MODELS) else []

    lines = wait_until(warmup_lines, "a warmup line for every model")
    assert {line["adapter"] for line in lines} == set(MODELS)
    assert all(line["status"] == 200 and line["output_tokens"] for line in lines)
    # Meanwhile a customer's request was refused, retryably.
    assert serving.gate is not None and serving.gate.status_code == 503 and serving.gate.headers["retry-after"] == "1"
    assert serving.gate.json()["error"]["code"] == 503


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_ping(serving, method):
    response = serving.client.request(method, "/ping")
    assert response.status_code == 200 and response.json() == {"status": "ready"}


def test_each_model_is_served_by_the_model_asked_for_on_every_route(serving):
    """The random adapters make greedy outputs that tell the models apart: the same model must give
    the same text on every route, and the four models four different texts. The response's `model`,
    the log line and the per-adapter counter must all name it too."""
    counted_before = serving.client.get("/_serving/stats").json()["adapter_requests"]
    texts: dict[tuple[str, str], str] = {}
    for model in MODELS:
        requests = {
            WAYS[0]: ("/v1/chat/completions", chat(model=model), {}),
            WAYS[1]: ("/invocations", chat(), {ADAPTER_HEADER: model}),
            WAYS[2]: ("/invocations", chat(model=model), {}),
        }
        for way, (path, body, headers) in requests.items():
            request_id = f"route-{model}-{WAYS.index(way)}"
            response = post(serving, path, body, request_id, headers)
            texts[model, way] = content(response)
            assert response.json()["model"] == model, (way, response.json()["model"])
            assert serving.request_line(request_id)["adapter"] == model, way
    for model in MODELS:
        assert len({texts[model, way] for way in WAYS}) == 1, {way: texts[model, way] for way in WAYS}
    assert len({texts[model, WAYS[0]] for model in MODELS}) == len(MODELS), texts
    counted = serving.client.get("/_serving/stats").json()["adapter_requests"]
    assert {model: counted[model] - counted_before[model] for model in MODELS} == dict.fromkeys(MODELS, len(WAYS))


def raw_post(serving: Serving, path: str, body: dict, headers: list[tuple[str, str]]) -> tuple[int, dict]:
    """http.client sends header values as given (httpx refuses trailing whitespace)."""
    data = json.dumps(body).encode()
    connection = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=REQUEST_TIMEOUT_SECONDS)
    try:
        connection.putrequest("POST", path)
        for name, value in [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers]:
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("path", "model", "headers", "says"),
    [
        # vLLM would serve the first header, the log would have said the second.
        ("/invocations", None, [(ADAPTER_HEADER, "jp_style_v1"), (ADAPTER_HEADER, "manga_domain_v3")], "2 times"),
        # vLLM keeps the trailing space and answers 404; an empty header would be the base model.
        ("/invocations", None, [(ADAPTER_HEADER, "jp_style_v1 ")], "unknown adapter 'jp_style_v1 '"),
        ("/invocations", "jp_style_v1", [(ADAPTER_HEADER, "")], "unknown adapter ''"),
        # vLLM's /v1 routes ignore the header.
        ("/v1/chat/completions", "manga_domain_v3", [(ADAPTER_HEADER, "jp_style_v1")], "not read on the /v1 routes"),
        ("/invocations", "shoujo_v9", [], "unknown adapter 'shoujo_v9' in the 'model' field"),
    ],
)
def test_an_ambiguous_adapter_is_refused_not_served_by_another_model(serving, path, model, headers, says):
    body = chat(**({"model": model} if model else {}))
    status, document = raw_post(serving, path, body, headers)
    assert status == 400 and document["error"]["param"] == "model" and says in document["error"]["message"]


def test_every_guard_answers_in_the_one_error_shape(serving):
    budget = 2048 - 600
    history = [{"role": "user", "content": "Tell me about this series. " * 40}] * 12
    assert estimate_chat_tokens(history) > budget
    cases = [
        # (path, raw body, content type, status, what the message or param says)
        ("/invocations", b"{" + b" " * (6 * 1024 * 1024), "application/json", 413, "larger than 6291456 bytes"),
        ("/invocations", json.dumps(chat()).encode(), "text/plain", 400, "Content-Type must be application/json"),
        ("/invocations", b"{not json", "application/json", 400, "not valid JSON"),
        ("/invocations", b"[1, 2]", "application/json", 400, "must be a JSON object"),
        ("/invocations", json.dumps({"max_tokens": 3}).encode(), "application/json", 400, "needs 'messages'"),
        ("/v1/chat/completions", json.dumps({"messages": []}).encode(), "application/json", 400, "'messages'"),
        ("/v1/completions", json.dumps({"prompt": ""}).encode(), "application/json", 400, "'prompt'"),
        ("/invocations", json.dumps({"messages": history}).encode(), "application/json", 400, f"{budget} tokens"),
    ]
    for index, (path, raw, content_type, status, says) in enumerate(cases):
        request_id = f"guard-{index}"
        response = serving.client.post(
            path, content=raw, headers={"Content-Type": content_type, "X-Request-Id": request_id}
        )
        error = response.json()["error"]
        assert (response.status_code, error["code"]) == (status, status), (index, response.text[:300])
        assert set(error) == {"message", "type", "param", "code"} and says in error["message"], error
        assert serving.request_line(request_id)["status"] == status


def test_a_stream_carries_usage_and_the_same_text_as_the_plain_answer(serving):
    adapter = ADAPTERS[1]
    plain = content(post(serving, "/invocations", chat(model=adapter, max_tokens=12), "stream-plain"))
    response = post(serving, "/invocations", chat(model=adapter, max_tokens=12, stream=True), "stream-1")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    chunks, final = events[:-2], events[-2]
    assert all(chunk["model"] == adapter and chunk["usage"]["prompt_tokens"] > 0 for chunk in chunks)
    assert "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks) == plain
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 12
    assert {"queue_time_ms", "time_to_first_token_ms"} <= set(final["metrics"])
    line = serving.request_line("stream-1")
    assert (line["adapter"], line["stream"], line["output_tokens"]) == (adapter, True, 12)


def test_one_request_log_line_per_request_with_token_counts(serving):
    secret = "MY-PRIVATE-QUESTION-2718"
    sent = {}
    for index in range(6):
        request_id = f"log-{index}"
        stream = index % 2 == 0
        model = MODELS[index % len(MODELS)]
        response = post(
            serving, "/invocations", chat(secret, max_tokens=5 + index, model=model, stream=stream), request_id
        )
        assert response.status_code == 200
        sent[request_id] = (model, stream, 5 + index)
    for request_id, (model, stream, max_tokens) in sent.items():
        line = serving.request_line(request_id)
        assert (line["adapter"], line["stream"], line["status"], line["error"]) == (model, stream, 200, None)
        assert line["prompt_tokens"] > 0 and line["output_tokens"] == max_tokens
        assert line["queue_wait_ms"] is not None and line["ttft_ms"] is not None and line["total_ms"] > 0
        assert sum(1 for e in serving.process.events("request") if e["request_id"] == request_id) == 1
    assert secret not in serving.process.output()


def test_real_metrics_become_emf_documents_that_pass_the_schema(serving):
    exposition = Exposition(serving.client.get("/metrics").text)
    for name in (
        VLLM_WAITING,
        VLLM_RUNNING,
        VLLM_KV_CACHE_USAGE,
        VLLM_PREFIX_QUERIES,
        VLLM_PREFIX_HITS,
        VLLM_PREEMPTIONS,
    ):
        assert exposition.total(name) is not None, name
    assert exposition.total(VLLM_PREFIX_QUERIES) > 0 and exposition.buckets(VLLM_QUEUE_TIME)

    def documents() -> list[dict]:
        return [line for line in serving.process.json_lines() if "_aws" in line]

    # Traffic of the tests above, counted per adapter in an interval after the baseline.
    def adapters_counted() -> set[str]:
        return {d[c.DIM_ADAPTER] for d in documents() if d.get(c.METRIC_ADAPTER_REQUESTS, 0) > 0}

    wait_until(lambda: adapters_counted() >= set(MODELS), "AdapterRequests for every model")
    all_documents = documents()
    assert all(emf_problems(document) == [] for document in all_documents)
    variant = [d for d in all_documents if c.METRIC_QUEUE_DEPTH in d]
    assert variant and all(d[c.DIM_ENDPOINT] == "mangaassist-llm-test" for d in variant)
    assert any(c.METRIC_ENGINE_QUEUE_TIME_P95 in d and c.METRIC_PREFIX_CACHE_HIT_RATE in d for d in variant)


def first_content_stream(serving: Serving, results: list, index: int) -> None:
    """The client's own times: sent, first event carrying answer text, last line."""
    body = chat(max_tokens=24, stream=True)
    with httpx.Client(timeout=REQUEST_TIMEOUT_SECONDS) as client:
        sent = time.perf_counter()
        first = None
        with client.stream("POST", f"{serving.client.base_url}/invocations", json=body) as response:
            for line in response.iter_lines():
                if first is None and line.startswith("data: {") and '"content":"' in line:
                    first = time.perf_counter()
        results[index] = (sent, first, time.perf_counter())


def latency_values(serving: Serving, metric: str) -> list[float]:
    documents = [line for line in serving.process.json_lines() if "_aws" in line and metric in line]
    return [value for document in documents for value in document[metric]]


def engine_ttft_sum_and_count(serving: Serving) -> tuple[float, float]:
    """vLLM's own time to first token, summed over its requests so far (seconds) and counted."""
    exposition = Exposition(serving.client.get("/metrics").text)
    return (
        exposition.total("vllm:time_to_first_token_seconds_sum") or 0.0,
        exposition.total("vllm:time_to_first_token_seconds_count") or 0.0,
    )


def measure_streams(
    serving: Serving, containers, count: int, concurrent: bool
) -> tuple[list[float], list[float], float]:
    """(served TTFT values, client-measured TTFTs, sorted; vLLM's own TTFT of those streams summed, ms)
    for `count` new streams. The /ping
    recorders of both containers pause meanwhile: with a /ping every 10 ms, the real engine's streams
    reached these clients only at their end (a follow-up; SageMaker pings every few seconds)."""
    for instance in containers.values():
        instance.recorder.paused = True
    try:
        time.sleep(1.5)  # earlier tests' requests are flushed (the middleware writes once a second)
        before = len(latency_values(serving, c.METRIC_TIME_TO_FIRST_TOKEN))
        engine_before = engine_ttft_sum_and_count(serving)
        results: list = [None] * count
        threads = [threading.Thread(target=first_content_stream, args=(serving, results, i)) for i in range(count)]
        for thread in threads:
            thread.start()
            if not concurrent:
                thread.join(REQUEST_TIMEOUT_SECONDS)
        for thread in threads:
            thread.join(REQUEST_TIMEOUT_SECONDS)
        engine_after = engine_ttft_sum_and_count(serving)
    finally:
        for instance in containers.values():
            instance.recorder.paused = False
    wait_until(lambda: len(latency_values(serving, c.METRIC_TIME_TO_FIRST_TOKEN)) >= before + count, "TTFT values")
    time.sleep(1.5)
    served = sorted(latency_values(serving, c.METRIC_TIME_TO_FIRST_TOKEN)[before:])
    measured = sorted((first - sent) * 1000 for sent, first, _ in results)
    print(
        f"\nTTFT ({'concurrent' if concurrent else 'one at a time'}) served {[round(v) for v in served]} ms, "
        f"measured by the clients {[round(v) for v in measured]} ms, "
        f"vLLM's own in all {(engine_after[0] - engine_before[0]) * 1000:.0f} ms"
    )
    assert len(served) == count, (served, measured)
    assert engine_after[1] - engine_before[1] == count, (engine_before, engine_after)
    return served, measured, (engine_after[0] - engine_before[0]) * 1000


def assert_served_matches_clients(served: list[float], measured: list[float], engine_ms: float) -> None:
    # vLLM's own TTFT runs from its input processing to its output processing, both inside the span
    # the middleware times (received -> first body byte): the served values add up to at least it.
    # The container sees each request after its client sent it and writes its first byte before the
    # client reads the first answer text: each value sits at or under the client's. Both are orderings,
    # not speeds: how far apart the figures are (the hop, this test's own client threads on a shared
    # 2-core machine) is printed above, never asserted.
    assert sum(served) + len(served) >= engine_ms, (served, engine_ms)
    for value, client_value in zip(served, measured, strict=True):
        assert value <= client_value + 1, (served, measured)


def test_real_streams_give_one_latency_value_each_matching_what_the_clients_measured(serving, containers):
    served, measured, engine_ms = measure_streams(serving, containers, 4, concurrent=False)
    assert_served_matches_clients(served, measured, engine_ms)
    assert len(latency_values(serving, c.METRIC_TIME_PER_OUTPUT_TOKEN)) >= 4


def test_concurrent_real_streams_give_one_value_each_none_later_than_its_client_saw(serving, containers):
    served, measured, engine_ms = measure_streams(serving, containers, 6, concurrent=True)
    assert_served_matches_clients(served, measured, engine_ms)


ENGINE_WORKLOAD = """\
adapters: {manga_domain_v3: 1, general_support_v2: 1, jp_style_v1: 1}
system_prompt_tokens: 100
user_turn_tokens: {min: 20, max: 60}
answer_tokens: {median: 32, sigma: 0.3, min: 8, max: 64}
"""


def test_a_short_capacity_sweep_of_the_real_engine_breaks_the_objective_and_answers(serving, containers, tmp_path):
    """`bin/loadtest --url` against the real vLLM through the image's supervisor and middleware."""
    workload = tmp_path / "workload.yaml"
    workload.write_text(ENGINE_WORKLOAD)
    out = tmp_path / "capacity"
    # Two cores: vLLM's CPU engine takes them both, and the generator waits for them (on SageMaker the
    # engine runs on another machine), so the send-lag limit is raised here, and the report keeps it:
    # at 300 ms the tool refused steps at 456-1,025/min in runs here because the generator fell behind
    # (send lag p99 330-359 ms), which is right for a measurement and wrong for this test of the mechanism.
    # A late send counts against TTFT (timed from the schedule), so lag still breaks the objective.
    for instance in containers.values():
        instance.recorder.paused = True
    # A 300 ms objective sits between two failures seen in CI runs on this machine: 200 ms broke at the
    # lowest rate when the machine was busy (231 ms at 120/min), and an objective scaled from the run's
    # unloaded TTFT (518 ms) was only reached once the generator, sharing the two cores with the
    # engine, fell behind (send lag p99 398 ms: the step measured the client, and the tool said so).
    slo_ms = 300
    run = subprocess.run(
        [sys.executable, "-m", "workbench.loadtest", "--url", str(serving.client.base_url), "--slo-ttft-ms", str(slo_ms),
         "--step-seconds", "5", "--start-rpm", "60", "--max-rpm", "60000", "--max-minutes", "4",
         "--workload", str(workload), "--out", str(out), "--max-send-lag-ms", "2000"],
        cwd=REPO, capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    for instance in containers.values():
        instance.recorder.paused = False
    print("\n" + run.stdout[-3000:])
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads((out / "capacity.json").read_text())
    assert record["requests_per_minute_per_instance"] > 0 and record["complete"]
    assert any(not step["held"] for step in record["steps"])
    assert all(step["errors"] == 0 for step in record["steps"] if step["held"])


def start_request_with_half_its_body(
    serving: Serving, body: dict, request_id: str
) -> tuple[http.client.HTTPConnection, bytes]:
    """A client still sending its request: headers and half the body out, the rest held back. The
    middleware counts it in flight from the headers on, so a drain must wait for it (deterministically,
    however fast the tiny engine answers the other streams)."""
    payload = json.dumps(body).encode()
    connection = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=REQUEST_TIMEOUT_SECONDS)
    connection.putrequest("POST", "/invocations")
    for name, value in (
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(payload))),
        ("X-Request-Id", request_id),
    ):
        connection.putheader(name, value)
    connection.endheaders()
    connection.send(payload[: len(payload) // 2])
    return connection, payload[len(payload) // 2 :]


def test_sigterm_with_streams_in_flight_lets_every_stream_finish_then_exits_0(serving):
    results: dict = {}
    max_tokens = 800  # short enough for the 25 s drain

    def stats() -> dict:
        return serving.client.get("/_serving/stats").json()

    before = stats()
    admitted_before = sum(before["adapter_requests"].values())
    slow, rest = start_request_with_half_its_body(serving, chat(max_tokens=max_tokens, stream=True), "drain-slow")
    wait_until(lambda: stats()["in_flight"] >= before["in_flight"] + 1, "the half-sent request in flight")
    threads = [stream_in_thread(serving, f"drain-{index}", max_tokens, results) for index in range(4)]
    # Signal once the middleware has admitted the four streams (they may finish first: the tiny engine is
    # fast); the half-sent request is in flight whatever the timing.
    wait_until(lambda: sum(stats()["adapter_requests"].values()) - admitted_before >= 4, "four streams admitted")
    signalled = time.monotonic()
    serving.process.signal(signal.SIGTERM)
    wait_until(lambda: serving.client.get("/ping").status_code == 503, "/ping to say 503")
    assert serving.client.get("/ping").json()["status"] == "draining"
    late = serving.client.post("/invocations", json=chat())
    assert late.status_code == 503 and late.headers["retry-after"] == "1"
    # The request that was still arriving when the signal landed is served to its end.
    slow.send(rest)
    answer = slow.getresponse()
    slow_events = sse_events(answer.read().decode())
    slow_done = time.monotonic()
    assert answer.status == 200 and slow_events[-1] == "[DONE]", slow_events[-3:]
    assert slow_events[-2]["usage"]["completion_tokens"] == max_tokens
    for thread in threads:
        thread.join(REQUEST_TIMEOUT_SECONDS)
    assert serving.process.wait(START_PATIENCE_SECONDS) == EXIT_OK
    for request_id, result in results.items():
        events = result["events"]
        assert result["status"] == 200 and events[-1] == "[DONE]", request_id
        assert not any(isinstance(e, dict) and "error" in e for e in events), request_id
        assert events[-2]["usage"]["completion_tokens"] == max_tokens, request_id
        assert serving.request_line(request_id)["status"] == 200
    assert slow_done > signalled and serving.request_line("drain-slow")["status"] == 200
    finished_after = sum(r["done"] > signalled for r in results.values())
    print(f"\n{finished_after} of 4 streams were still arriving when SIGTERM landed, and the half-sent request")
