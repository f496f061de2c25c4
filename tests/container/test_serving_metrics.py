"""Interval metrics from vLLM's /metrics (names from vllm/v1/metrics/loggers.py, 0.33.0) and the
EMF documents built from them, validated against the EMF specification."""

import copy
import math

import pytest
from emf_check import emf_problems

from container.serving import contract as c
from container.serving.emf import emf_document
from container.serving.metrics import Snapshot, interval_documents, interval_values
from container.serving.prometheus import Exposition, bucket_delta, histogram_quantile
from container.serving.settings import Settings
from workbench.standin.engine import REQUEST_LATENCY_BUCKETS, FakeEngine
from workbench.standin.harness import free_port, serving_env

EXPOSITION = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="base"} 3.0
vllm:num_requests_running{engine="1",model_name="base"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="base"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="base"} 0.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="base"} 1000.0
vllm:prefix_cache_queries_created{engine="0",model_name="base"} 1.7e9
vllm:prefix_cache_hits_total{engine="0",model_name="base"} 400.0
vllm:num_preemptions_total{engine="0",model_name="base"} 2.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.1",model_name="base"} 10.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.5",model_name="base"} 30.0
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="base"} 40.0
vllm:request_queue_time_seconds_count{engine="0",model_name="base"} 40.0
vllm:some_label{engine="0",path="a \\"quoted\\" \\\\ value"} 1.0
"""


def snapshot(exposition=EXPOSITION, oom=0, adapters=None, shed=0):
    stats = {"oom_errors": oom, "shed": shed, "adapter_requests": adapters or {"base": 0}}
    return Snapshot.from_scrapes(exposition, stats)


def test_exposition_sums_label_sets_and_reads_buckets():
    parsed = Exposition(EXPOSITION)
    assert parsed.total("vllm:num_requests_running") == 5.0
    assert parsed.total("vllm:missing") is None
    assert parsed.buckets("vllm:request_queue_time_seconds") == {0.1: 10.0, 0.5: 30.0, math.inf: 40.0}
    assert parsed.samples["vllm:some_label"][0][0]["path"] == 'a \\"quoted\\" \\\\ value'


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0.25, 0.1), (0.5, 0.1 + 0.4 * (20 - 10) / 20), (0.75, 0.5), (0.95, 0.5), (0.1, 0.04)],
)
def test_histogram_quantile_matches_prometheus(q, expected):
    buckets = {0.1: 10.0, 0.5: 30.0, math.inf: 40.0}
    assert histogram_quantile(q, buckets) == pytest.approx(expected)


def test_histogram_quantile_of_an_empty_interval_is_none():
    assert histogram_quantile(0.5, {0.1: 0.0, math.inf: 0.0}) is None
    assert histogram_quantile(0.5, {}) is None


def test_bucket_delta_and_counter_reset():
    assert bucket_delta({0.1: 15.0, math.inf: 20.0}, {0.1: 10.0, math.inf: 12.0}) == {0.1: 5.0, math.inf: 8.0}
    assert bucket_delta({0.1: 1.0, math.inf: 2.0}, {0.1: 10.0, math.inf: 12.0}) == {0.1: 1.0, math.inf: 2.0}


def test_interval_values_from_two_scrapes():
    later = (
        EXPOSITION.replace("} 1000.0", "} 1500.0")
        .replace('hits_total{engine="0",model_name="base"} 400.0', 'hits_total{engine="0",model_name="base"} 800.0')
        .replace('le="0.1",model_name="base"} 10.0', 'le="0.1",model_name="base"} 20.0')
        .replace('le="0.5",model_name="base"} 30.0', 'le="0.5",model_name="base"} 50.0')
        .replace('le="+Inf",model_name="base"} 40.0', 'le="+Inf",model_name="base"} 60.0')
        .replace(
            'num_preemptions_total{engine="0",model_name="base"} 2.0',
            'num_preemptions_total{engine="0",model_name="base"} 5.0',
        )
    )
    values = interval_values(snapshot(oom=1, shed=2), snapshot(later, oom=4, shed=9))
    assert values[c.METRIC_QUEUE_DEPTH] == 7.0
    assert values[c.METRIC_RUNNING_SEQUENCES] == 5.0
    assert values[c.METRIC_KV_CACHE_USAGE] == 25.0
    assert values[c.METRIC_PREFIX_CACHE_HIT_RATE] == pytest.approx(100 * 400 / 500)
    assert values[c.METRIC_PREEMPTIONS] == 3.0
    assert values[c.METRIC_OOM_ERRORS] == 3.0
    assert values[c.METRIC_SHED_REQUESTS] == 7.0  # requests answered 429 by the admission check
    # 20 observations in the interval: 10 at <= 0.1 s, 10 in (0.1, 0.5], none above.
    assert values[c.METRIC_ENGINE_QUEUE_TIME_P95] == pytest.approx((0.1 + 0.4 * 9 / 10) * 1000)
    assert set(values) <= set(c.VARIANT_METRICS)


def test_an_idle_interval_leaves_out_rates_and_percentiles_instead_of_inventing_them():
    values = interval_values(snapshot(), snapshot())
    assert c.METRIC_PREFIX_CACHE_HIT_RATE not in values
    assert c.METRIC_ENGINE_QUEUE_TIME_P95 not in values
    assert values[c.METRIC_PREEMPTIONS] == 0.0
    assert values[c.METRIC_SHED_REQUESTS] == 0.0  # written as 0, so the shedding alarm sees quiet minutes


def test_the_stand_in_exposition_has_the_names_we_read():
    engine = FakeEngine("base", [], 4, 0.0)
    engine.queue_time.observe(0.03)
    parsed = Exposition(engine.exposition())
    current = Snapshot.from_scrapes(engine.exposition(), {"oom_errors": 0, "shed": 0, "adapter_requests": {}})
    assert parsed.buckets("vllm:request_queue_time_seconds")[0.3] == 1.0
    assert len(current.queue_time_buckets) == len(REQUEST_LATENCY_BUCKETS) + 1
    assert current.queue_depth == 0.0 and current.running == 0.0 and current.kv_cache_usage == 0.0


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(serving_env(tmp_path, free_port()))


def test_interval_documents_are_valid_emf_with_contract_names(settings):
    previous = snapshot(adapters={"base": 1, "jp_style_v1": 5})
    current = snapshot(adapters={"base": 3, "jp_style_v1": 9})
    documents = interval_documents(settings, previous, current, 1_795_000_000_000)
    assert len(documents) == 3
    for document in documents:
        assert emf_problems(document) == []
        directive = document["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == c.METRIC_NAMESPACE
        assert document[c.DIM_ENDPOINT] == settings.endpoint_name
        assert document[c.DIM_VARIANT] == settings.variant_name
    variant, *per_adapter = documents
    assert variant["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [list(c.VARIANT_DIMENSIONS)]
    units = {m["Name"]: m["Unit"] for m in variant["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert units == {name: c.VARIANT_METRICS[name] for name in units}
    assert {(d[c.DIM_ADAPTER], d[c.METRIC_ADAPTER_REQUESTS]) for d in per_adapter} == {("base", 2), ("jp_style_v1", 4)}
    assert all(d["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [list(c.ADAPTER_DIMENSIONS)] for d in per_adapter)


VALID = emf_document("NS", {"EndpointName": "e"}, {"Requests": (1.0, "Count")}, 1_795_000_000_000)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.pop("_aws"), "'_aws' is a required property"),
        (lambda d: d["_aws"].pop("Timestamp"), "'Timestamp' is a required property"),
        (lambda d: d["_aws"].update(Timestamp="now"), "is not of type 'integer'"),
        (lambda d: d["_aws"].update(Extra=1), "Additional properties"),
        (lambda d: d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0].update(Unit="Tokens"), "is not one of"),
        (lambda d: d["_aws"]["CloudWatchMetrics"][0].update(Namespace=""), "should be non-empty"),
        (lambda d: d["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0].extend(f"d{i}" for i in range(30)), "too long"),
        (lambda d: d.pop("EndpointName"), "dimension 'EndpointName'"),
        (lambda d: d.update(EndpointName=3), "dimension 'EndpointName'"),
        (lambda d: d.update(Requests="1"), "metric 'Requests'"),
        (lambda d: d.update(Requests=None), "metric 'Requests'"),
        (lambda d: d.update(Requests=float("nan")), "metric 'Requests'"),
        (lambda d: d.update(Requests=list(range(101))), "metric 'Requests'"),
    ],
)
def test_the_emf_check_rejects_what_the_specification_forbids(mutate, expected):
    assert emf_problems(VALID) == []
    broken = copy.deepcopy(VALID)
    mutate(broken)
    problems = emf_problems(broken)
    assert any(expected in problem for problem in problems), problems
