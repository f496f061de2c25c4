"""`python -m sandbox traffic --backfill HOURS`: past minutes of invocations in the sandbox's CloudWatch, so
`bin/ops traffic` has the hour it needs without an hour of waiting. Against a real moto server, as the
sandbox runs it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto.server import ThreadedMotoServer

from sandbox.server import CREDENTIALS, State
from sandbox.traffic import backfill
from standin.harness import free_port

ENDPOINT = "mangaassist-llm-prod"


@pytest.fixture
def sandbox_state() -> Iterator[State]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    state = State(0, "prod", "ap-northeast-1", "123456789012", f"http://127.0.0.1:{port}", "", ENDPOINT)
    sagemaker = state.session().client("sagemaker", endpoint_url=state.moto_url)
    sagemaker.create_model(
        ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r", PrimaryContainer={"Image": "i"}
    )
    variants = [
        {
            "VariantName": name,
            "ModelName": "m",
            "InitialInstanceCount": 1,
            "InstanceType": "ml.m5.large",
            "InitialVariantWeight": weight,
        }
        for name, weight in (("primary", 95), ("canary", 5))
    ]
    sagemaker.create_endpoint_config(EndpointConfigName="c", ProductionVariants=variants)
    sagemaker.create_endpoint(EndpointName=ENDPOINT, EndpointConfigName="c")
    yield state
    server.stop()


def minute_sums(state: State, variant: str, hours: int) -> list[float]:
    cloudwatch = boto3.client("cloudwatch", region_name=state.region, endpoint_url=state.moto_url, **CREDENTIALS)
    now = datetime.now(UTC)
    answer = cloudwatch.get_metric_statistics(
        Namespace="AWS/SageMaker",
        MetricName="Invocations",
        Dimensions=[{"Name": "EndpointName", "Value": ENDPOINT}, {"Name": "VariantName", "Value": variant}],
        StartTime=now - timedelta(hours=hours + 1),
        EndTime=now,
        Period=60,
        Statistics=["Sum"],
    )
    return [point["Sum"] for point in answer["Datapoints"]]


def test_backfill_writes_every_past_minute_split_by_the_live_weights(sandbox_state: State) -> None:
    said = backfill(sandbox_state, per_minute=2000, hours=5)  # 1,200 datapoints: two PutMetricData calls' worth
    assert said.startswith("300 minutes from ") and said.endswith("each: primary 1900, canary 100")
    assert minute_sums(sandbox_state, "primary", 5) == [1900.0] * 300
    assert minute_sums(sandbox_state, "canary", 5) == [100.0] * 300


@pytest.mark.parametrize("hours", [0, -1, 14 * 24 + 1])
def test_backfill_refuses_a_span_the_traffic_export_cannot_read(sandbox_state: State, hours: float) -> None:
    with pytest.raises(ValueError, match=r"--backfill takes 0 < HOURS <= 336"):
        backfill(sandbox_state, per_minute=2000, hours=hours)
