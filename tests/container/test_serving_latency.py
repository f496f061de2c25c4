"""Latency as clients feel it: one value per request at the container boundary, written as EMF value
arrays with variant dimensions only, and matching what the clients themselves measured."""

import threading
import time

import httpx
import pytest
from emf_check import emf_problems

from container.serving import contract as c
from container.serving.latency import MAX_VALUES_PER_METRIC, LatencyValues, request_latency
from container.serving.state import ServingState, StateRecord, write_state
from workbench.standin.harness import (
    PATIENCE_SECONDS,
    chat_body,
    free_port,
    serving_env,
    start_standin,
    wait_for_listening,
)

DIMENSIONS = {c.DIM_ENDPOINT: "mangaassist-llm-test", c.DIM_VARIANT: "primary"}
TOKENS = 10
TOKEN_INTERVAL = 0.02
REQUESTS = 12


def test_values_are_split_into_documents_of_at_most_100_per_metric():
    values = LatencyValues()
    for index in range(250):
        values.add(ttft_ms=float(index), tpot_ms=1.0 if index < 30 else None, e2e_ms=float(index) * 2)
    documents = values.documents(DIMENSIONS, 1_700_000_000_000, {"ModelVersion": "v1"})
    assert len(documents) == 3 and not values
    for document in documents:
        assert emf_problems(document) == []
        assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[c.DIM_ENDPOINT, c.DIM_VARIANT]]
        assert all(len(document[name]) <= MAX_VALUES_PER_METRIC for name in c.LATENCY_METRICS if name in document)
    ttft = [v for d in documents for v in d[c.METRIC_TIME_TO_FIRST_TOKEN]]
    assert ttft == [float(i) for i in range(250)]
    assert sum(len(d.get(c.METRIC_TIME_PER_OUTPUT_TOKEN, [])) for d in documents) == 30
    assert c.METRIC_TIME_PER_OUTPUT_TOKEN not in documents[1]  # a metric with no values is left out


def test_values_are_never_negative():
    values = LatencyValues()
    values.add(ttft_ms=-0.001, tpot_ms=None, e2e_ms=5.0)
    (document,) = values.documents(DIMENSIONS, 0, {})
    assert document[c.METRIC_TIME_TO_FIRST_TOKEN] == [0.0]


@pytest.mark.parametrize(
    ("stream", "first_byte_at", "tokens", "completed", "expected"),
    [
        (True, 10.2, 11, True, (200.0, 80.0, 1000.0)),  # 0.8 s after the first byte over 10 more tokens
        (True, 10.2, 1, True, (200.0, None, 1000.0)),  # one token: no time per output token
        (True, 10.2, None, True, (200.0, None, 1000.0)),  # no usage in the answer
        (True, 10.2, 11, False, (200.0, None, None)),  # cut after its first byte: it felt the first token
        (True, 0.0, None, False, (None, None, None)),  # no byte ever sent
        (False, 11.0, 11, True, (None, None, 1000.0)),  # not streamed: the first byte is the whole answer
    ],
)
def test_request_latency(stream, first_byte_at, tokens, completed, expected):
    got = request_latency(
        stream=stream, started=10.0, first_byte_at=first_byte_at, finished_at=11.0, output_tokens=tokens,
        completed=completed,
    )  # fmt: skip
    assert got == pytest.approx(expected)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """One batch slot, so that requests sent together queue and their first tokens spread out."""
    workdir = tmp_path_factory.mktemp("latency")
    port = free_port()
    env = serving_env(workdir, port, STANDIN_TOKEN_INTERVAL=str(TOKEN_INTERVAL), STANDIN_STARTUP_DELAY="0")
    process = start_standin(workdir, env, port, middleware=True, extra=("--max-num-seqs", "1"))
    wait_for_listening(port, process)
    write_state(env["SERVING_STATE_FILE"], StateRecord(ServingState.READY, "set by the test"))
    yield f"http://127.0.0.1:{port}", process
    process.stop()


def stream_one(url: str, results: list, index: int) -> None:
    """The client's own view: from just before it sends to the first event line, and to the last."""
    with httpx.Client(timeout=PATIENCE_SECONDS) as client:
        sent = time.perf_counter()
        first = None
        with client.stream("POST", f"{url}/invocations", json=chat_body(stream=True, max_tokens=TOKENS)) as answer:
            for line in answer.iter_lines():
                if first is None and line.startswith("data: "):
                    first = time.perf_counter()
        results[index] = (first - sent, time.perf_counter() - first)


def latency_documents(process) -> list[dict]:
    return [line for line in process.json_lines() if "_aws" in line and c.METRIC_END_TO_END_LATENCY in line]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(q * len(ordered) + 0.5) - 1)]  # nearest rank


def test_streamed_requests_give_one_value_each_matching_what_the_clients_measured(engine):
    url, process = engine
    results: list = [None] * REQUESTS
    threads = [threading.Thread(target=stream_one, args=(url, results, i)) for i in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE_SECONDS)
    deadline = time.monotonic() + PATIENCE_SECONDS
    while sum(len(d[c.METRIC_END_TO_END_LATENCY]) for d in latency_documents(process)) < REQUESTS:
        assert time.monotonic() < deadline, "the latency documents were not written"
        time.sleep(0.05)
    documents = latency_documents(process)
    for document in documents:
        assert emf_problems(document) == []
        assert {k: document[k] for k in DIMENSIONS} == DIMENSIONS and "InstanceId" not in document
    served_ttft = [v for d in documents for v in d.get(c.METRIC_TIME_TO_FIRST_TOKEN, [])]
    served_tpot = [v for d in documents for v in d.get(c.METRIC_TIME_PER_OUTPUT_TOKEN, [])]
    assert len(served_ttft) == len(served_tpot) == REQUESTS
    client_ttft = [first * 1000 for first, _ in results]
    client_tpot = [rest * 1000 / (TOKENS - 1) for _, rest in results]
    # One slot: the k-th request waits for k-1 others, so first tokens spread over at least 2 s (the stand-in
    # sleeps its token interval: a busy machine only makes it longer). The container sees each request after
    # the client sent it and before the client reads its first byte, so each of its values sits under the
    # client's, order statistics included; orderings only, no tolerance a busy machine could break.
    assert max(client_ttft) - min(client_ttft) > 1000
    for q in (0.5, 0.95):
        served, measured = percentile(served_ttft, q), percentile(client_ttft, q)
        assert 0 < served <= measured + 1, (q, served, measured)  # +1: the values are rounded to the ms
    # Tokens come no faster than the stand-in's interval, and the container's span of each stream (first
    # token plus the rest) lies inside the client's: summed over the requests, since values are not paired.
    assert min(served_tpot) >= TOKEN_INTERVAL * 1000 - 1
    served_spans = sum(served_ttft) + sum(served_tpot) * (TOKENS - 1)
    client_spans = sum(client_ttft) + sum(client_tpot) * (TOKENS - 1)
    assert served_spans <= client_spans + REQUESTS * TOKENS, (served_spans, client_spans)


def test_warmup_and_refused_requests_give_no_values(engine):
    url, process = engine
    before = sum(len(d[c.METRIC_END_TO_END_LATENCY]) for d in latency_documents(process))
    httpx.post(f"{url}/invocations", json=chat_body(model="no-such-adapter"), timeout=PATIENCE_SECONDS)
    httpx.post(f"{url}/invocations", json=chat_body(), headers={"x-serving-warmup": "1"}, timeout=PATIENCE_SECONDS)
    answered = httpx.post(f"{url}/invocations", json=chat_body(), timeout=PATIENCE_SECONDS)
    assert answered.status_code == 200
    deadline = time.monotonic() + PATIENCE_SECONDS
    while sum(len(d[c.METRIC_END_TO_END_LATENCY]) for d in latency_documents(process)) == before:
        assert time.monotonic() < deadline, "no latency document for the answered request"
        time.sleep(0.05)
    time.sleep(1.5)  # one more flush interval: anything else would have been written by now
    documents = latency_documents(process)
    assert sum(len(d[c.METRIC_END_TO_END_LATENCY]) for d in documents) == before + 1
    newest = documents[-1]
    assert c.METRIC_TIME_TO_FIRST_TOKEN not in newest  # not streamed
