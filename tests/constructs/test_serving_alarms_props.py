"""ServingAlarms on its own: a bare stack, one variant, thresholds stated here. The real environments'
alarms are tested in tests/stacks/ (test_alarm_routing.py, test_first_deploy.py)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from config.metric_names import HIGH_RESOLUTION
from constructs.serving_alarms import AlarmedVariant, CeilingLoad, ServingAlarms, ServingAlarmsProps
from tests.constructs.minimal_props import THRESHOLDS


def build(*variants: AlarmedVariant) -> tuple[ServingAlarms, Template]:
    stack = cdk.Stack(cdk.App(), "Alarms")
    props = ServingAlarmsProps("chat", variants, THRESHOLDS, admission_deadline_ms=2100, metrics_interval_seconds=10)
    alarms = ServingAlarms(stack, "Alarms", props)
    return alarms, Template.from_stack(stack)


@pytest.fixture(scope="module")
def one_variant() -> tuple[ServingAlarms, Template]:
    return build(AlarmedVariant("primary", vcpus=4, gpu_memory_percent=98.2))


def alarm(name: str, **properties) -> dict:
    return {"AlarmDescription": Match.string_like_regexp(rf"^\[(page|ticket)\] primary: {name}"), **properties}


def test_four_rollback_alarms_and_no_capacity_ceiling_without_a_ceiling_load(one_variant) -> None:
    alarms, template = one_variant
    assert len(alarms.rollback_alarms) == 4
    template.resource_count_is("AWS::CloudWatch::Alarm", len(alarms.routed))
    assert not [r for r in alarms.routed if "capacity-ceiling" in r.alarm.node.id]
    assert set(alarms.metrics) == {"primary"}


def test_the_thresholds_are_the_props(one_variant) -> None:
    _, template = one_variant
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", alarm("5XX above 0.5 % of invocations for 4 min", Threshold=0.5, EvaluationPeriods=4)
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", alarm("time to first token p95 above the 700 ms SLO", Threshold=700)
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", alarm("GPU utilisation below 10 % for 60 min", EvaluationPeriods=12)
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", alarm(r"requests shed \(429, projected wait over 2100 ms\)")
    )


def test_the_cpu_threshold_scales_with_the_variants_vcpus(one_variant) -> None:
    _, template = one_variant
    template.has_resource_properties("AWS::CloudWatch::Alarm", alarm("CPU above 90 % of 4 vCPUs", Threshold=360))
    template.has_resource_properties("AWS::CloudWatch::Alarm", alarm("GPU memory above 98.2 %", Threshold=98.2))


def test_a_ceiling_load_adds_the_capacity_ceiling_alarm_on_the_tracked_metric() -> None:
    alarms, template = build(
        AlarmedVariant("primary", vcpus=4, gpu_memory_percent=98.2, capacity_ceiling=CeilingLoad(HIGH_RESOLUTION, 18))
    )
    assert len(alarms.rollback_alarms) == 4
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        alarm(
            "ConcurrentRequestsPerModel above 18",
            EvaluationPeriods=15,
            Metrics=Match.array_with(
                [
                    Match.object_like(
                        {"Expression": "IF(load > 18 AND FILL(below_max, 1) <= 0 AND FILL(short, 1) <= 0, 1, 0)"}
                    )
                ]
            ),
        ),
    )


def test_the_instance_count_divides_the_metric_lines_by_the_images_rate(one_variant) -> None:
    alarms, _ = one_variant
    assert alarms.instance_count("primary").expression == "samples_primary / 6"
