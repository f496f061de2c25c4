"""Issue 27 §2: the endpoint config's MetricsConfig is explicit, one sick instance shows (an alarm routed as
a ticket and per-instance dashboard rows), and a GPU fault's exit bound is configured and checked."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from config import load_environment
from config.checks.container import check_unhealthy_exit
from config.container_env import container_environment
from constructs.instance_outlier import InstanceOutlier
from container.serving import contract
from container.serving.settings import Settings
from stacks.serving_props import capacity_spread, outlier_props

METRICS = ("GPUUtilization", "Invocations", "ModelLatency", "Invocation5XXErrors")


def outlier_alarms(template: Template) -> dict[str, dict]:
    return {
        key: r["Properties"]
        for key, r in template.find_resources("AWS::CloudWatch::Alarm").items()
        if "instance-outlier" in key.replace("instanceoutlier", "instance-outlier")
    }


def test_the_endpoint_config_states_every_metrics_setting(prod, dev) -> None:
    """Left out, EnableDetailedObservability is True for a new endpoint config (botocore's model)."""
    prod.serving.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "MetricsConfig": {
                "EnableEnhancedMetrics": True,
                "EnableDetailedObservability": False,
                "MetricPublishFrequencyInSeconds": 60,
            }
        },
    )
    dev.serving.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"MetricsConfig": Match.object_like({"EnableDetailedObservability": False})},
    )


def test_each_variant_has_an_outlier_alarm_on_its_instances_latency(prod) -> None:
    alarms = outlier_alarms(prod.serving)
    assert len(alarms) == len(prod.cfg.variants)
    m = prod.cfg.endpoint_metrics
    for variant in prod.cfg.variants:
        (alarm,) = [a for a in alarms.values() if a["AlarmDescription"].startswith(f"[ticket] {variant.name}:")]
        watched = next(q for q in alarm["Metrics"] if q["ReturnData"])
        (query,) = [q for q in alarm["Metrics"] if not q["ReturnData"]]
        assert watched["Expression"] == f"MAX({query['Id']}) / MIN({query['Id']})"
        assert query["Expression"] == (
            'SELECT AVG("ModelLatency") FROM SCHEMA("AWS/SageMaker", "EndpointName", "InstanceId", "VariantName") '
            f"WHERE \"EndpointName\" = '{prod.cfg.endpoint_name}' AND \"VariantName\" = '{variant.name}' "
            'GROUP BY "InstanceId"'
        )
        assert query["Period"] == 60
        # prod's variants run two pool types: the ratio widened by their capacities' spread (issue 42 item 3)
        rates = [prod.cfg.planning.capacity[t].requests_per_minute for t in variant.instance_types]
        assert len(rates) == 2
        assert alarm["Threshold"] == round(m.outlier_latency_ratio * max(rates) / min(rates), 2)
        assert alarm["Threshold"] > m.outlier_latency_ratio
        assert alarm["EvaluationPeriods"] == m.outlier_minutes
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "ignore"


def test_the_outlier_alarm_is_a_ticket(prod) -> None:
    outputs = prod.serving.to_json()["Outputs"]
    ticket_topic = next(o["Value"] for key, o in outputs.items() if key.startswith("TicketTopicArn"))
    paging_topic = next(o["Value"] for key, o in outputs.items() if key.startswith("AlarmTopicArn"))
    for alarm in outlier_alarms(prod.serving).values():
        assert ticket_topic in alarm["AlarmActions"] and ticket_topic in alarm["OKActions"]
        assert paging_topic not in alarm["AlarmActions"]


def dashboard_widgets(template: Template) -> list[dict]:
    """The dashboard body as JSON: its Fn::Join with every token (region, alarm ARNs) read as "TOKEN"."""
    (dashboard,) = template.find_resources("AWS::CloudWatch::Dashboard").values()
    _, parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"]
    return json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))["widgets"]


def test_the_dashboard_has_a_per_instance_row_per_variant(prod) -> None:
    widgets = dashboard_widgets(prod.serving)
    for variant in prod.cfg.variants:
        row = [w for w in widgets if w["properties"].get("title", "").startswith(f"{variant.name}: ")]
        assert [w["type"] for w in row] == ["alarm", "metric", "metric", "metric", "metric"]
        assert len({w["y"] for w in row}) == 1 and sum(w["width"] for w in row) == 24  # one full row
        queries = [line[0] for w in row[1:] for line in w["properties"]["metrics"]]
        assert len(queries) == len(METRICS)  # one Metrics Insights query per widget
        for metric, query in zip(METRICS, queries, strict=True):
            assert query["expression"].startswith("SELECT ") and f'("{metric}") FROM SCHEMA(' in query["expression"]
            assert '"EndpointName", "InstanceId", "VariantName")' in query["expression"]  # per-instance series only
            assert f'"VariantName" = \'{variant.name}\' GROUP BY "InstanceId"' in query["expression"]
            assert query["label"] == "${LABEL}"  # each line keeps its InstanceId as its name


def test_without_enhanced_metrics_there_is_nothing_to_compare() -> None:
    cfg = load_environment("prod")
    cfg = cfg.model_copy(
        update={"endpoint_metrics": cfg.endpoint_metrics.model_copy(update={"enhanced_metrics": False})}
    )
    stack = cdk.Stack(cdk.App(), "Outlier")
    outlier = InstanceOutlier(stack, "Outlier", outlier_props(cfg))
    assert outlier.routed == [] and outlier.alarms == []
    Template.from_stack(stack).resource_count_is("AWS::CloudWatch::Alarm", 0)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"publish_frequency_seconds": 120},
            "endpoint_metrics.publish_frequency_seconds: Input should be 10, 30 or 60",
        ),
        ({"outlier_latency_ratio": 1}, "endpoint_metrics.outlier_latency_ratio: Input should be greater than 1"),
    ],
)
def test_metrics_settings_are_checked(problems, change, expected) -> None:
    found = problems(lambda raw: raw.setdefault("endpoint_metrics", {}).update(change))
    assert len(found) == 1 and found[0].startswith(expected), found


def test_the_unhealthy_exit_bound_reaches_the_container() -> None:
    cfg = load_environment("prod")
    env = container_environment(cfg, cfg.variants[0])
    assert env[contract.ENV_UNHEALTHY_EXIT_SECONDS] == str(cfg.container.unhealthy_exit_seconds)
    assert Settings.from_env(env).unhealthy_exit_seconds == cfg.container.unhealthy_exit_seconds


def test_the_unhealthy_exit_bound_is_at_least_two_gpu_checks(problems) -> None:
    found = problems(lambda raw: raw["container"].update(unhealthy_exit_seconds=30))
    assert found == ["container.unhealthy_exit_seconds: Input should be greater than or equal to 60, got 30"]


def test_a_sick_instance_must_be_gone_within_the_startup_window() -> None:
    cfg = load_environment("prod")
    assert check_unhealthy_exit(cfg) == []
    container = cfg.container.model_copy(update={"unhealthy_exit_seconds": 880})  # + 25 s drain > 900 s
    assert check_unhealthy_exit(cfg.model_copy(update={"container": container})) == [
        (
            "container.unhealthy_exit_seconds",
            "plus container.drain_seconds (25) must be less than container.startup_health_check_timeout_seconds "
            "900 (a sick instance must exit within the window a starting one gets), got 880 (total 905 s)",
        )
    ]


def test_the_threshold_is_the_configured_ratio_for_one_type_and_widened_by_the_pools_spread() -> None:
    cfg = load_environment("prod")
    g5, g6 = (cfg.planning.capacity[t].requests_per_minute for t in ("ml.g5.xlarge", "ml.g6.xlarge"))
    assert capacity_spread(cfg, ["ml.g5.xlarge"]) == 1.0
    assert capacity_spread(cfg, ["ml.g5.xlarge", "ml.g6.xlarge"]) == max(g5, g6) / min(g5, g6)
    assert (
        capacity_spread(cfg, ["ml.g5.xlarge", "ml.p9.unknown"]) == 1.0
    )  # a type without a figure: nothing to widen by
