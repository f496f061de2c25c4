"""The stacks and the serving image agree: env vars the model sets parse in the container, and the
metrics alarms/scaling/dashboard read are exactly the ones the image's emitter writes."""

from __future__ import annotations

import pytest

from config import load_environment
from config.container_env import container_environment
from container.serving import contract
from container.serving.engine_command import engine_command
from container.serving.latency import LatencyValues
from container.serving.metrics import Snapshot, interval_documents
from container.serving.settings import Settings

EXPOSITION = """\
vllm:num_requests_running{engine="0",model_name="base"} 3.0
vllm:num_requests_waiting{engine="0",model_name="base"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="base"} 0.25
vllm:prefix_cache_queries_total{engine="0",model_name="base"} @queries@
vllm:prefix_cache_hits_total{engine="0",model_name="base"} @hits@
vllm:num_preemptions_total{engine="0",model_name="base"} 2.0
vllm:request_queue_time_seconds_bucket{engine="0",le="0.3",model_name="base"} @fast@
vllm:request_queue_time_seconds_bucket{engine="0",le="+Inf",model_name="base"} @all@
"""


@pytest.mark.parametrize("env_name", ["dev", "staging", "prod"])
def test_every_variants_environment_parses_in_the_container(env_name: str) -> None:
    cfg = load_environment(env_name)
    for variant in cfg.variants:
        settings = Settings.from_env(container_environment(cfg, variant))
        assert settings.max_num_seqs == cfg.engine.max_num_seqs
        assert settings.adapters == tuple(cfg.engine.adapters)
        assert settings.variant_name == variant.name and settings.model_version == variant.image_tag
        command = " ".join(engine_command(settings))
        assert f"--max-num-seqs {cfg.engine.max_num_seqs}" in command
        assert f"--max-lora-rank {cfg.engine.max_lora_rank}" in command


@pytest.mark.parametrize("drain_seconds", [6, 29])
def test_the_drain_range_config_allows_is_the_range_the_container_accepts(problems, drain_seconds: int) -> None:
    cfg = load_environment("prod")
    assert problems(lambda raw: raw["container"].update(drain_seconds=drain_seconds)) == []
    env = {**container_environment(cfg, cfg.variants[0]), contract.ENV_DRAIN_SECONDS: str(drain_seconds)}
    assert Settings.from_env(env).drain_seconds == drain_seconds


def test_a_drain_the_container_would_refuse_is_refused_at_synth(problems) -> None:
    assert problems(lambda raw: raw["container"].update(drain_seconds=5)) == [
        "container.drain_seconds: Input should be greater than 5, got 5"
    ]


def emitted_documents() -> list[dict]:
    settings = Settings.from_env(container_environment(load_environment("prod"), load_environment("prod").variants[0]))

    def snap(queries: int, hits: int, fast: int, total: int, ooms: int, requests: int) -> Snapshot:
        text = EXPOSITION
        for name, value in (("queries", queries), ("hits", hits), ("fast", fast), ("all", total)):
            text = text.replace(f"@{name}@", str(value))
        return Snapshot.from_scrapes(
            text, {"oom_errors": ooms, "shed": ooms, "adapter_requests": {"jp_style_v1": requests}}
        )

    documents = interval_documents(
        settings, snap(100, 50, 5, 10, 0, 1), snap(200, 120, 15, 30, 1, 4), 1_700_000_000_000
    )
    # The middleware's per-request latency documents, with the settings' own dimensions.
    latency = LatencyValues()
    latency.add(ttft_ms=120.0, tpot_ms=20.0, e2e_ms=3000.0, shed_wait_ms=4500.0)
    dimensions = {contract.DIM_ENDPOINT: settings.endpoint_name, contract.DIM_VARIANT: settings.variant_name}
    return documents + latency.documents(dimensions, 1_700_000_000_000, {})


def test_the_emitter_writes_every_contract_metric_with_the_contract_dimensions() -> None:
    emitted: dict[str, list[str]] = {}
    for document in emitted_documents():
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == contract.METRIC_NAMESPACE
        for metric in directive["Metrics"]:
            emitted[metric["Name"]] = directive["Dimensions"][0]
    assert set(emitted) == set(contract.VARIANT_METRICS) | set(contract.ADAPTER_METRICS) | set(contract.LATENCY_METRICS)
    assert emitted[contract.METRIC_TIME_TO_FIRST_TOKEN] == list(contract.VARIANT_DIMENSIONS)
    assert emitted[contract.METRIC_QUEUE_DEPTH] == list(contract.VARIANT_DIMENSIONS)
    assert emitted[contract.METRIC_ADAPTER_REQUESTS] == list(contract.ADAPTER_DIMENSIONS)


def test_alarms_and_scaling_read_only_metrics_the_emitter_writes(prod) -> None:
    emitted = {m["Name"] for d in emitted_documents() for m in d["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    read = {}
    for alarm in prod.serving.find_resources("AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        stats = [props] + [m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m]
        for metric in stats:
            if metric.get("Namespace") == contract.METRIC_NAMESPACE:
                read[metric["MetricName"]] = sorted(d["Name"] for d in metric["Dimensions"])
    assert read, "no alarm reads the serving image's metrics"
    assert set(read) <= emitted and contract.METRIC_TIME_TO_FIRST_TOKEN in read
    assert all(dimensions == sorted(contract.VARIANT_DIMENSIONS) for dimensions in read.values())


@pytest.mark.parametrize("env_name", ["dev", "staging", "prod"])
def test_the_engine_stall_time_reaches_the_container_from_config(env_name: str) -> None:
    cfg = load_environment(env_name)
    settings = Settings.from_env(container_environment(cfg, cfg.variants[0]))
    assert settings.engine_stall_seconds == cfg.container.engine_stall_seconds == 30


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (60, "container.engine_stall_seconds: Input should be less than 60, got 60"),
        (4, "container.engine_stall_seconds: Input should be greater than or equal to 5, got 4"),
    ],
)
def test_an_engine_stall_time_past_the_invocation_timeout_is_refused(problems, value: int, message: str) -> None:
    assert problems(lambda raw: raw["container"].update(engine_stall_seconds=value)) == [message]


def test_the_admission_deadline_defaults_to_four_ttft_objectives_and_reaches_the_container() -> None:
    cfg = load_environment("prod")
    assert cfg.container.admission_deadline_ms is None and cfg.admission_deadline_ms == 4 * cfg.alarms.ttft_p95_ms
    env = container_environment(cfg, cfg.variants[0])
    assert Settings.from_env(env).admission_deadline_ms == cfg.admission_deadline_ms == 2000


def test_an_admission_deadline_past_the_invocation_timeout_is_refused_at_synth(problems) -> None:
    assert problems(lambda raw: raw["container"].update(admission_deadline_ms=60_001)) == [
        "container.admission_deadline_ms: must be at most SageMaker's 60000 ms invocation timeout "
        "(allowed 1-60000), got 60001"
    ]
    assert problems(lambda raw: raw["alarms"].update(ttft_p95_ms=20_000)) == [
        "container.admission_deadline_ms: defaults to 4 x alarms.ttft_p95_ms = 80000 ms, over SageMaker's "
        "60000 ms invocation timeout: set it (allowed 1-60000)"
    ]
    assert problems(lambda raw: raw["container"].update(admission_deadline_ms=0)) == [
        "container.admission_deadline_ms: Input should be greater than or equal to 1, got 0"
    ]
