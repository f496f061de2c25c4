"""`bin/ops verify` fails when a rollback alarm's metric has no data (issue 50 §3); alarms shaped as
constructs/serving_alarms.py writes them.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ops.operations.errors import ExitCode

ENGINE = "MangaAssist/LLMServing"
SILENT, ERRORS = "prod-primary-engine-silent", "prod-primary-5xx-rate"


def variant_dimensions(world, variant: str = "primary") -> list[dict]:
    return [{"Name": "EndpointName", "Value": world.endpoint}, {"Name": "VariantName", "Value": variant}]


def rollback_alarms(world) -> None:
    """The two kinds of rollback alarm, named in the serving stack's outputs as the stack names them."""
    cloudwatch = world.client("cloudwatch")
    heartbeat = {"Namespace": ENGINE, "MetricName": "QueueDepth", "Dimensions": variant_dimensions(world)}
    cloudwatch.put_metric_alarm(
        AlarmName=SILENT,
        Metrics=[
            {
                "Id": "samples",
                "MetricStat": {"Metric": heartbeat, "Period": 60, "Stat": "SampleCount"},
                "ReturnData": False,
            },
            {"Id": "silent", "Expression": "FILL(samples, 0)", "ReturnData": True},
        ],
        EvaluationPeriods=3,
        Threshold=1,
        ComparisonOperator="LessThanThreshold",
        TreatMissingData="breaching",
    )
    cloudwatch.put_metric_alarm(
        AlarmName=ERRORS,
        Namespace="AWS/SageMaker",
        MetricName="Invocation5XXErrors",
        Dimensions=variant_dimensions(world),
        Statistic="Sum",
        Period=60,
        EvaluationPeriods=5,
        Threshold=1,
        ComparisonOperator="GreaterThanThreshold",
        TreatMissingData="notBreaching",
    )
    world.stack(world.config_names[-1], rollback_alarms=(SILENT, ERRORS))


def heartbeat(world) -> None:
    """What the container's EMF lines become once CloudWatch extracts them."""
    world.client("cloudwatch").put_metric_data(
        Namespace=ENGINE,
        MetricData=[
            {
                "MetricName": "QueueDepth",
                "Dimensions": variant_dimensions(world),
                "Value": 0,
                "Timestamp": datetime.now(UTC),
            }
        ],
    )


def lines(output: str, alarm: str) -> list[str]:
    return [line for line in output.splitlines() if f"rollback alarm {alarm} " in line]


def test_no_engine_metric_fails_verify_naming_the_alarm_and_the_metric(prod, cli) -> None:
    rollback_alarms(prod)
    result = cli("verify", "prod")
    assert result.exit_code == ExitCode.CHECK_FAILED
    (silent,) = lines(result.output, SILENT)
    assert "reads MangaAssist/LLMServing QueueDepth (SampleCount): no data in the last 15 min" in silent
    assert "EMF lines may not be extracted" in silent
    (errors,) = lines(result.output, ERRORS)  # no request reached primary: not judged
    assert "not judged, primary served no request in 15 min" in errors


def test_with_the_heartbeat_and_traffic_every_rollback_metric_has_data(prod, cli) -> None:
    rollback_alarms(prod)
    heartbeat(prod)
    prod.traffic("primary", invocations=100, errors=0)
    result = cli("verify", "prod")
    found = lines(result.output, SILENT) + lines(result.output, ERRORS)
    assert len(found) == 2 and all("data in the last 15 min" in line for line in found), result.output


def test_traffic_without_the_per_request_metric_fails(prod, cli) -> None:
    """Requests were served, yet the 5XX alarm's series is empty (e.g. enhanced metrics changed its shape)."""
    rollback_alarms(prod)
    heartbeat(prod)
    prod.client("cloudwatch").put_metric_data(
        Namespace="AWS/SageMaker",
        MetricData=[
            {"MetricName": "Invocations", "Dimensions": variant_dimensions(prod), "Value": 50, "Timestamp": datetime.now(UTC)}
        ],
    )
    result = cli("verify", "prod")
    assert result.exit_code == ExitCode.CHECK_FAILED
    (errors,) = lines(result.output, ERRORS)
    assert "reads AWS/SageMaker Invocation5XXErrors (Sum): no data in the last 15 min" in errors
