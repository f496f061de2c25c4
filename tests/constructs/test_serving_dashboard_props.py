"""ServingDashboard on its own: a bare stack, one variant's alarms, then the optional rows. The real
environments' dashboards are tested in tests/stacks/ and test_instance_outlier.py."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from constructs.instance_outlier import InstanceOutlier, InstanceOutlierProps
from constructs.serving_alarms import AlarmedVariant, ServingAlarms, ServingAlarmsProps
from constructs.serving_dashboard import ScheduledMinimum, ServingDashboard, ServingDashboardProps, VariantCapacity
from tests.constructs.minimal_props import THRESHOLDS

EVENING = ScheduledMinimum("evening", 3, "cron(0 18 * * ? *)", "cron(0 23 * * ? *)", "Asia/Tokyo")


def widgets(build) -> list[dict]:  # noqa: ANN001 (a function of the stack and its alarms, returning the props)
    """The dashboard body's widgets, every token (region, alarm ARNs) read as "TOKEN"."""
    stack = cdk.Stack(cdk.App(), "Dashboard")
    alarms = ServingAlarms(
        stack,
        "Alarms",
        ServingAlarmsProps(
            "chat", (AlarmedVariant("primary", vcpus=4, gpu_memory_percent=98.2),), THRESHOLDS, 2100, 10
        ),
    )
    ServingDashboard(stack, "Dashboard", build(stack, alarms))
    (dashboard,) = Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard").values()
    _, parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"]
    return json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))["widgets"]


def titles(found: list[dict]) -> list[str]:
    return [w["properties"].get("title", "") for w in found]


@pytest.fixture(scope="module")
def minimal() -> list[dict]:
    return widgets(lambda _, alarms: ServingDashboardProps(alarms, max_num_seqs=24, admission_deadline_ms=2100))


@pytest.fixture(scope="module")
def everything() -> list[dict]:
    def props(stack: cdk.Stack, alarms: ServingAlarms) -> ServingDashboardProps:
        outlier = InstanceOutlier(stack, "Outlier", InstanceOutlierProps("chat", ("primary",), 2.0, 10))
        return ServingDashboardProps(
            alarms,
            max_num_seqs=24,
            admission_deadline_ms=2100,
            capacity={"primary": VariantCapacity(2, 8, (EVENING,))},
            instance_pools={"primary": ("ml.g5.xlarge", "ml.g6.xlarge")},
            instance_outlier=outlier,
        )

    return widgets(props)


def test_the_titles_name_the_engines_limit_and_the_admission_deadline(minimal) -> None:
    assert "Running sequences (of max_num_seqs 24)" in titles(minimal)
    assert "Shed requests / min (429, projected wait over 2100 ms)" in titles(minimal)


def test_without_autoscaling_pools_or_outlier_there_are_no_such_rows(minimal, everything) -> None:
    (text,) = [w for w in minimal if w["type"] == "text"]
    assert text["properties"]["markdown"] == "### Scheduled capacity (local time)"
    assert not [t for t in titles(minimal) if "by instance type" in t or t.startswith("primary: ")]
    assert len(everything) == len(minimal) + 3 + 5  # three graphs by instance type, one outlier row of five


def test_the_capacity_text_and_the_max_line_come_from_the_variants_bounds(everything) -> None:
    (text,) = [w for w in everything if w["type"] == "text"]
    assert text["properties"]["markdown"].splitlines()[1:] == [
        "**primary**: 2-8 outside windows",
        "- evening: min 3 from `cron(0 18 * * ? *)` to `cron(0 23 * * ? *)` (Asia/Tokyo)",
    ]
    (instances,) = [w for w in everything if w["properties"].get("title", "").startswith("Instances per variant")]
    assert instances["properties"]["annotations"]["horizontal"] == [
        {"label": "primary max", "value": 8, "yAxis": "left"}
    ]


def test_a_pooled_variant_gets_a_line_per_instance_type(everything) -> None:
    (by_type, *_) = [w for w in everything if "by instance type" in w["properties"].get("title", "")]
    labels = [line[-1]["label"] for line in by_type["properties"]["metrics"]]
    assert labels == ["primary ml.g5.xlarge", "primary ml.g6.xlarge"]
