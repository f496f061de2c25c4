"""Issue 52 item 6: a run against a real endpoint records the platform's ConcurrentRequestsPerModel (Average,
what target tracking reads, and Maximum) beside its own mean in flight per step, and the derived target
uses the measured ratio (1.0, stated, until one is measured)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from config.loader import load_environment
from config.scaling_target import target_provenance, tracking_target
from config.schema import CapacityMeasurement
from workbench.loadtest.load import StepResult, window_of
from workbench.loadtest.record import reading_ratio
from workbench.loadtest.signal_reading import read_platform_concurrency


@pytest.fixture
def cloudwatch():
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1")


def publish(cloudwatch, moments_and_values, variant: str = "primary") -> None:
    dimensions = [{"Name": "EndpointName", "Value": "endpoint"}, {"Name": "VariantName", "Value": variant}]
    cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=[
        {"MetricName": "ConcurrentRequestsPerModel", "Dimensions": dimensions, "Timestamp": when, "Value": value}
        for when, value in moments_and_values
    ])  # fmt: skip


def step(mean_in_flight: float) -> StepResult:
    fields = dict.fromkeys(
        ["offered_rpm", "achieved_rpm", "requests", "errors", "error_percent", "ttft_p50_ms", "ttft_p95_ms",
         "ttft_p99_ms", "itl_p95_ms", "e2e_p95_ms", "output_tokens_per_s", "send_lag_p99_ms", "seconds"], 0
    )  # fmt: skip
    result = StepResult(**fields, mean_in_flight=mean_in_flight)
    result.window_utc = window_of(100.0, 60.0, 160.0, datetime(2026, 11, 29, 1, 1, tzinfo=UTC).timestamp())
    return result


def test_each_step_records_the_platform_reading_beside_its_own_in_flight(cloudwatch):
    steps = [step(4.0)]
    began = datetime.fromisoformat(steps[0].window_utc[0])
    # Two 10 s datapoints of the step's window (Average 5 and 7, Maximum 12), one of another variant's.
    publish(cloudwatch, [(began + timedelta(seconds=1), 3.0), (began + timedelta(seconds=2), 7.0),
                         (began + timedelta(seconds=11), 12.0), (began + timedelta(seconds=12), 2.0)])
    publish(cloudwatch, [(began + timedelta(seconds=1), 50.0)], variant="canary")
    read_platform_concurrency(cloudwatch, "endpoint", "primary", steps)
    assert (steps[0].platform_concurrency_average, steps[0].platform_concurrency_maximum) == (6.0, 12.0)
    assert steps[0].concurrency_reading_ratio == 1.5


def test_a_step_without_datapoints_keeps_none(cloudwatch):
    steps = [step(4.0)]
    read_platform_concurrency(cloudwatch, "endpoint", "primary", steps)
    assert steps[0].concurrency_reading_ratio is None
    assert reading_ratio({"steps": [{**steps[0].as_dict(), "held": True}]}) is None


def test_the_derived_target_follows_the_measured_ratio_and_says_which_it_used():
    cfg = load_environment("prod", against_deployed=False)
    assumed = tracking_target(cfg, "primary")
    assert "assumed 1x" in target_provenance(cfg, "primary")
    g5 = cfg.planning.capacity["ml.g5.xlarge"]
    measured = CapacityMeasurement(where="staging/canary", measured_at="2026-11-29T00:00:00Z", slo_ttft_p95_ms=500,
                                   concurrency_reading_ratio=1.35)  # fmt: skip
    capacity = {**cfg.planning.capacity, "ml.g5.xlarge": g5.model_copy(update={"measured": measured})}
    capacity["ml.g6.xlarge"] = capacity["ml.g6.xlarge"].model_copy(update={"concurrent_sequences": 99})
    changed = cfg.model_copy(update={"planning": cfg.planning.model_copy(update={"capacity": capacity})})
    assert tracking_target(changed, "primary") == round(assumed * 1.35, 2)
    assert "1.35x the client's in flight, measured" in target_provenance(changed, "primary")
