"""`python -m workbench.sandbox traffic --backfill HOURS`: past minutes of invocations in the sandbox's CloudWatch, so
`bin/ops traffic` has the hour it needs without an hour of waiting. Against a real moto server, as the
sandbox runs it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from workbench.sandbox.server import CREDENTIALS, State
from workbench.sandbox.traffic import backfill

ENDPOINT = "mangaassist-llm-prod"


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


def test_backfill_writes_every_past_minute_split_by_the_live_weights(moto_sandbox: State) -> None:
    said = backfill(moto_sandbox, per_minute=2000, hours=5)  # 1,200 datapoints: two PutMetricData calls' worth
    assert said.startswith("300 minutes from ") and said.endswith("each: primary 1900, canary 100")
    assert minute_sums(moto_sandbox, "primary", 5) == [1900.0] * 300
    assert minute_sums(moto_sandbox, "canary", 5) == [100.0] * 300


@pytest.mark.parametrize("hours", [0, -1, 14 * 24 + 1])
def test_backfill_refuses_a_span_the_traffic_export_cannot_read(moto_sandbox: State, hours: float) -> None:
    with pytest.raises(ValueError, match=r"--backfill takes 0 < HOURS <= 336"):
        backfill(moto_sandbox, per_minute=2000, hours=hours)
