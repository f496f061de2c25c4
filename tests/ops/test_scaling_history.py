"""`bin/ops scaling-history`: DescribeScalingActivities (not in moto 5.2) through botocore's Stubber."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

import tests.operator_policy_check as check
from ops.operations.environment import load_environment_config
from ops.operations.scaling_history import OUT, UNKNOWN, classify, direction, percentile, variant_types
from tests.operator_policy_check import Call, refusals
from tests.ops_world import SAFE_NOW, World, edit_environment, endpoint_answer, endpoint_config_answer

ENDPOINT = "mangaassist-llm-prod"
QUOTA_MESSAGE = (
    "Failed to set desired instance count to 9. Reason: The account-level service limit 'ml.g4dn.xlarge for "
    "endpoint usage' is 8 Instances, with current utilization of 8 Instances and a request delta of 1 Instances. "
    "Please use AWS Service Quotas to request an increase for this quota. (Service: AmazonSageMaker; Status Code: "
    "400; Error Code: ResourceLimitExceeded)"
)
HIGH = "monitor alarm TargetTracking-endpoint/mangaassist-llm-prod/variant/primary-AlarmHigh-1a2b in state ALARM triggered policy primary-invocations"
LOW = "monitor alarm TargetTracking-endpoint/mangaassist-llm-prod/variant/primary-AlarmLow-3c4d in state ALARM triggered policy primary-invocations"


def activity(
    variant: str, started: datetime, minutes: float | None, target: int, cause: str, status: str = "Successful", **extra
) -> dict[str, Any]:
    """A ScalingActivity as Application Auto Scaling returns it for a SageMaker variant."""
    message = {
        "Successful": f"Successfully set desired instance count to {target}. Change successfully fulfilled by sagemaker.",
        "Failed": QUOTA_MESSAGE,
    }.get(status, "")
    item = {
        "ActivityId": f"{variant}-{started:%d%H%M}",
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{ENDPOINT}/variant/{variant}",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "Description": f"Setting desired instance count to {target}.",
        "Cause": cause,
        "StartTime": started,
        "StatusCode": status,
        **({"StatusMessage": message} if message else {}),
        **extra,
    }
    if minutes is not None:
        item["EndTime"] = started + timedelta(minutes=minutes)
    return item


def days_ago(days: float) -> datetime:
    return SAFE_NOW - timedelta(days=days)


MEASURED_KEYS = ["where", "measured_at", "days", "samples", "p50_minutes", "p95_minutes"]
SCHEDULED = "scheduled action name tokyo-evening-peak-start was triggered"
PRIMARY = [
    activity("primary", days_ago(40), 6.0, 5, SCHEDULED),  # first of the record: direction unknown
    activity("primary", days_ago(39.9), 4.0, 2, "scheduled action name tokyo-evening-peak-end was triggered"),
    activity("primary", days_ago(30), 6.5, 5, SCHEDULED),  # 2 -> 5: out, by comparison
    activity("primary", days_ago(20), 7.0, 6, HIGH),
    activity("primary", days_ago(10), 5.0, 7, HIGH),
    activity("primary", days_ago(9.9), 3.0, 5, LOW),  # scale-in: counted apart
    activity("primary", days_ago(5), 9.2, 8, HIGH),
    activity("primary", days_ago(2), 1.5, 9, HIGH, status="Failed"),
    activity("primary", days_ago(1), None, 9, HIGH, status="InProgress"),
]
CANARY = [activity("canary", days_ago(3), 8.0, 2, "monitor alarm TargetTracking-x-AlarmHigh-9 in state ALARM")]


@pytest.fixture
def prod(environments, worlds) -> World:
    """One type per variant (no pools): durations group by it (SageMaker records no new instance's type)."""
    edit_environment(environments, "prod", lambda d: [v.update(fallback_instance_types=[]) for v in d["variants"]])
    world = worlds("prod")
    world.deploy()
    return world


@pytest.fixture
def activities(prod: World, cli, every_cli_call_is_allowed_by_the_operator_policy) -> Iterator[Stubber]:
    """A Stubber's client, its calls recorded for the operator-policy proof like the CLI's own."""
    client = boto3.client("application-autoscaling", region_name=prod.cfg.region)
    calls, session = every_cli_call_is_allowed_by_the_operator_policy, boto3.Session(region_name=prod.cfg.region)

    def record(params: dict, model: Any, **_: Any) -> None:
        calls.append(Call(prod.cfg, session, model.service_model.service_name, model.name, dict(params)))

    client.meta.events.register("before-parameter-build", record)
    cli.runtime.client_overrides["application-autoscaling"] = client
    stub = Stubber(client)
    with stub:
        yield stub
        stub.assert_no_pending_responses()


def answer(stub: Stubber, variant: str, items: list[dict[str, Any]], page_size: int = 4) -> None:
    """The variant's activities, newest first, over as many pages as page_size makes."""
    items = sorted(items, key=lambda a: a["StartTime"], reverse=True)
    pages = [items[i : i + page_size] for i in range(0, len(items), page_size)] or [[]]
    params = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": f"endpoint/{ENDPOINT}/variant/{variant}",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    }
    for number, page in enumerate(pages):
        token = {"NextToken": f"page-{number + 1}"} if number + 1 < len(pages) else {}
        expected = {**params, **({"NextToken": f"page-{number}"} if number else {})}
        stub.add_response("describe_scaling_activities", {"ScalingActivities": page, **token}, expected)


def test_durations_per_type_with_p50_and_p95_and_the_failures_with_their_message(activities, cli) -> None:
    answer(activities, "primary", PRIMARY)
    answer(activities, "canary", CANARY)

    result = cli("scaling-history", "prod")

    assert result.exit_code == 0, result.output
    out = result.output
    # 2->5 (schedule, compared), 5->6, 6->7, 5->8 (AlarmHigh) on primary; 1?->2 on canary: 5 scale-outs
    assert "ml.g4dn.xlarge  5           7.0      9.2      9.2" in out
    assert "primary  ml.g4dn.xlarge  2026-10-25 04:00 UTC  2->5   6.5      schedule tokyo-evening-peak-start" in out
    assert "5->6   7.0      policy primary-invocations (AlarmHigh)" in out
    failed = out.split("capacity that did not arrive)\n")[1].split("\n\n")[0].splitlines()
    assert failed == [
        "  ✗ primary (ml.g4dn.xlarge) 2026-11-22 04:00 UTC: Failed, 8->9",
        f"      {QUOTA_MESSAGE}",
        "      cause: policy primary-invocations (AlarmHigh)",
    ]
    assert "scale-ins 2, in progress 1, overridden 0, direction unknown 1" in out
    assert "now: assumed: 4 min, 216 s P50 scale-out of an ml.g5.xlarge with container caching" in out
    assert "2026-06-16); never measured (`bin/ops scaling-history`)" in out
    assert "--write-config would record 10 (p95 9.2 min, 5 scale-outs)" in out


def test_days_keeps_the_recent_ones_and_the_older_record_still_tells_the_direction(activities, cli) -> None:
    answer(activities, "primary", PRIMARY)
    answer(activities, "canary", [])

    result = cli("scaling-history", "prod", "--days", "25")

    assert result.exit_code == 0, result.output
    assert "ml.g4dn.xlarge  3           7.0      9.2      9.2" in result.output  # 7.0, 5.0, 9.2
    assert "2->5" not in result.output.split("Successful scale-outs")[1].split("Provisioning")[0]
    assert "scale-ins 1, in progress 1, overridden 0, direction unknown 0" in result.output


def test_write_config_records_the_p95_rounded_up_with_where_and_when(activities, cli, environments) -> None:
    answer(activities, "primary", PRIMARY)
    answer(activities, "canary", CANARY)
    before = (environments / "prod.yaml").read_text()

    result = cli("scaling-history", "prod", "--write-config")

    assert result.exit_code == 0, result.output
    assert (
        "planning.provisioning_minutes: 10 (p95 9.2 min over 5 scale-outs on prod: canary, primary "
        "(mangaassist-llm-prod), measured 2026-11-24T04:00:00Z)" in result.output
    )
    planning = load_environment_config("prod").planning
    assert planning.provisioning_minutes == 10
    measured = planning.provisioning_measured
    assert measured is not None
    assert (measured.samples, measured.days, measured.p50_minutes, measured.p95_minutes) == (5, 42, 7.0, 9.2)
    assert planning.provisioning_provenance() == (
        "measured: p95 9.2 min (p50 7.0) over 5 scale-outs on prod: canary, primary (mangaassist-llm-prod) 2026-11-24"
    )
    after = (environments / "prod.yaml").read_text().splitlines()
    assert [line for line in before.splitlines() if line not in after] == []
    added = [line.split(":")[0].strip() for line in after if line not in before.splitlines()]
    assert added == ["provisioning_minutes", "provisioning_measured", *MEASURED_KEYS]


def test_write_config_refuses_too_few_scale_outs_and_writes_nothing(activities, cli, environments) -> None:
    answer(activities, "primary", PRIMARY[:4])  # 2 scale-outs, 1 of unknown direction
    answer(activities, "canary", [])
    before = (environments / "prod.yaml").read_text()

    result = cli("scaling-history", "prod", "--write-config")

    assert result.exit_code == 3
    assert (
        "error: 2 successful scale-out(s) in the last 42 days on prod: fewer than 5, too few for a p95; nothing "
        "written (planning.provisioning_minutes stays 4: assumed: 4 min" in result.stderr
    )
    assert (environments / "prod.yaml").read_text() == before


def test_more_than_six_weeks_is_refused_before_any_aws_call(cli) -> None:
    result = cli("scaling-history", "prod", "--days", "43")

    assert result.exit_code == 2
    assert "--days 43: Application Auto Scaling keeps scaling activities for six weeks, so at most --days 42" in (
        result.stderr
    )


def test_the_operator_policy_must_allow_describe_scaling_activities(
    activities, cli, monkeypatch, every_cli_call_is_allowed_by_the_operator_policy
) -> None:
    answer(activities, "primary", PRIMARY)
    answer(activities, "canary", CANARY)
    assert cli("scaling-history", "prod").exit_code == 0
    calls = every_cli_call_is_allowed_by_the_operator_policy
    assert ("application-autoscaling", "DescribeScalingActivities") in {(c.service, c.operation) for c in calls}

    original = check.operator_statements

    def without(scope):
        return [
            {**s, "Action": [a for a in s["Action"] if a != "application-autoscaling:DescribeScalingActivities"]}
            for s in original(scope)
        ]

    monkeypatch.setattr(check, "operator_statements", without)
    assert "application-autoscaling:DescribeScalingActivities on *: not allowed by prod's operator policy" in (
        refusals(calls)
    )
    monkeypatch.setattr(check, "operator_statements", original)


def test_a_variant_with_instance_pools_reports_its_types_together_with_todays_split() -> None:
    sagemaker = boto3.client("sagemaker", region_name="ap-northeast-1")
    stub = Stubber(sagemaker)
    pools = [{"InstanceType": "ml.g6.xlarge", "Priority": 2}, {"InstanceType": "ml.g5.xlarge", "Priority": 1}]
    primary = {"VariantName": "primary", "ModelName": "m", "InstancePools": pools}
    canary = {"VariantName": "canary", "ModelName": "m", "InstanceType": "ml.g5.xlarge"}
    stub.add_response("describe_endpoint_config", endpoint_config_answer("c", [primary, canary]))
    counts = [{"InstanceType": t, "CurrentInstanceCount": n} for t, n in (("ml.g5.xlarge", 3), ("ml.g6.xlarge", 2))]
    live = [{"VariantName": "primary", "CurrentInstanceCount": 5, "DesiredInstanceCount": 5, "InstancePools": counts},
            {"VariantName": "canary", "CurrentInstanceCount": 1, "DesiredInstanceCount": 1}]  # fmt: skip
    stub.add_response("describe_endpoint", endpoint_answer(ENDPOINT, live, "c"))
    with stub:
        config = sagemaker.describe_endpoint_config(EndpointConfigName="c")
        described = sagemaker.describe_endpoint(EndpointName=ENDPOINT)

    primary, canary = variant_types(described, config)

    assert primary.types == ("ml.g5.xlarge", "ml.g6.xlarge")  # priority 1 first
    assert primary.in_service == {"ml.g5.xlarge": 3, "ml.g6.xlarge": 2}
    assert primary.label == "ml.g5.xlarge or ml.g6.xlarge (pools: type not recorded)"
    assert (canary.label, canary.in_service) == ("ml.g5.xlarge", {"ml.g5.xlarge": 1})


def test_direction_from_the_alarm_name_then_from_the_count_before() -> None:
    assert direction(HIGH, 3, 5) == OUT  # target tracking's own word wins over a count changed outside it
    assert direction(SCHEDULED, 5, 2) == OUT
    assert direction(SCHEDULED, 5, None) == UNKNOWN
    assert direction(SCHEDULED, 5, 5) == UNKNOWN
    # A range change names its bound: a raised floor adds instances, a lowered ceiling removes them, with no
    # earlier count to compare with (the first activity of the record).
    assert direction("minimum capacity was set to 27", 27, None) == OUT
    assert direction("maximum capacity was set to 3", 3, None) == "in"
    found = classify("primary", list(reversed(PRIMARY[:3])))
    assert [(a.before, a.target, a.direction) for a in found] == [(None, 5, UNKNOWN), (5, 2, "in"), (2, 5, OUT)]


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([9.2, 5.0, 6.5, 7.0, 8.0], 95) == 9.2
    assert percentile([9.2, 5.0, 6.5, 7.0, 8.0], 50) == 7.0
    assert percentile(range(1, 21), 95) == 19
    with pytest.raises(ValueError):
        percentile([], 50)
