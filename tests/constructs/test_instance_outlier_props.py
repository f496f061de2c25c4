"""InstanceOutlier on its own: a bare stack and the fewest props that make sense. The real environments'
alarms and rows are tested in test_instance_outlier.py."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Match, Template

from constructs.instance_outlier import InstanceOutlier, InstanceOutlierProps


@pytest.fixture(scope="module")
def built() -> tuple[InstanceOutlier, Template]:
    stack = cdk.Stack(cdk.App(), "Outlier")
    props = InstanceOutlierProps(
        endpoint_name="chat",
        variant_names=("primary", "pooled"),
        latency_ratio=2.0,
        minutes=10,
        pool_spread={"pooled": 1.5},
    )
    outlier = InstanceOutlier(stack, "Outlier", props)
    outlier.add_to(cloudwatch.Dashboard(stack, "Dashboard"))
    return outlier, Template.from_stack(stack)


def test_one_ticket_alarm_per_variant_at_the_ratio_widened_by_its_pools_spread(built) -> None:
    outlier, template = built
    assert [r.route.severity.value for r in outlier.routed] == ["ticket", "ticket"]
    for variant, threshold in (("primary", 2.0), ("pooled", 3.0)):
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "AlarmDescription": Match.string_like_regexp(rf"^\[ticket\] {variant}: "),
                "Threshold": threshold,
                "EvaluationPeriods": 10,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "TreatMissingData": "ignore",
                "Metrics": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Expression": Match.string_like_regexp(
                                    f"WHERE \"EndpointName\" = 'chat' AND \"VariantName\" = '{variant}' "
                                )
                            }
                        )
                    ]
                ),
            },
        )


def test_the_dashboard_gets_a_row_per_variant(built) -> None:
    _, template = built
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    body = str(dashboard["Properties"]["DashboardBody"])
    assert body.count("instance outlier") == 2  # one alarm-status widget per variant


def test_no_variant_no_alarm() -> None:
    stack = cdk.Stack(cdk.App(), "Outlier")
    outlier = InstanceOutlier(stack, "Outlier", InstanceOutlierProps("chat", (), latency_ratio=2.0, minutes=10))
    assert outlier.routed == []
    Template.from_stack(stack).resource_count_is("AWS::CloudWatch::Alarm", 0)
