"""What a first deploy on a real account needs from the templates (issue 10), on prod and dev.

Each environment is synthesised once per session (conftest fixtures).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config import load_catalog

DOCKERFILE = Path(__file__).resolve().parents[2] / "container" / "Dockerfile"


@pytest.fixture(params=["prod", "dev"])
def environment(request):
    return request.getfixturevalue(request.param)


def _topic_policies(template) -> dict[str, list[dict]]:
    """Each topic's policy statements, by the topic's logical ID (the paging and the ticket topic)."""
    policies = template.find_resources("AWS::SNS::TopicPolicy").values()
    return {p["Properties"]["Topics"][0]["Ref"]: p["Properties"]["PolicyDocument"]["Statement"] for p in policies}


def _alarm_statement(statements: list[dict]) -> dict:
    (allow,) = [s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    return allow


def test_alarms_may_publish_to_each_topic_beside_the_tls_deny(environment) -> None:
    policies = _topic_policies(environment.serving)
    assert len(policies) == 2  # paging and ticket (issue 27)
    for statements in policies.values():
        deny = [s for s in statements if s["Effect"] == "Deny"]
        assert deny and deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        allow = _alarm_statement(statements)
        assert allow["Effect"] == "Allow"
        assert allow["Action"] == "sns:Publish"
        assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_each_topic_policy_names_exactly_the_alarms_that_notify_it(environment) -> None:
    total = 0
    for topic, statements in _topic_policies(environment.serving).items():
        allowed = {
            arn["Fn::GetAtt"][0] for arn in _alarm_statement(statements)["Condition"]["ArnLike"]["aws:SourceArn"]
        }
        notifying = environment.serving.find_resources(
            "AWS::CloudWatch::Alarm", {"Properties": {"AlarmActions": [{"Ref": topic}]}}
        )
        assert allowed == set(notifying)
        total += len(allowed)
    assert total > 20


def _fixed_names(resource: dict) -> dict[str, str]:
    """Top-level `...Name` properties holding a literal string: a physical name fixed at synth."""
    return {
        key: value
        for key, value in resource.get("Properties", {}).items()
        if key.endswith("Name") and isinstance(value, str)
    }


@pytest.mark.parametrize("stack", ["image", "serving"])
def test_no_fixed_physical_name_is_kept_after_a_failed_create(environment, stack) -> None:
    """DeletionPolicy Retain keeps a resource when the first create rolls back; with a fixed name
    every retry then fails with "already exists". RetainExceptOnCreate does not keep it."""
    resources = getattr(environment, stack).to_json()["Resources"]
    offenders = {
        logical_id: _fixed_names(resource)
        for logical_id, resource in resources.items()
        if resource.get("DeletionPolicy") == "Retain" and _fixed_names(resource)
    }
    assert offenders == {}


def test_endpoint_log_group_is_kept_on_delete_but_not_after_a_failed_create(environment) -> None:
    environment.serving.has_resource(
        "AWS::Logs::LogGroup",
        {
            "Properties": {"LogGroupName": f"/aws/sagemaker/Endpoints/{environment.cfg.endpoint_name}"},
            "DeletionPolicy": "RetainExceptOnCreate",
            "UpdateReplacePolicy": "Retain",
        },
    )


def _variants(environment) -> list[dict]:
    (config,) = environment.serving.find_resources("AWS::SageMaker::EndpointConfig").values()
    return config["Properties"]["ProductionVariants"]


def test_every_variant_runs_on_an_ami_whose_driver_runs_the_image(environment) -> None:
    catalog = load_catalog()
    for variant in _variants(environment):
        ami = catalog.inference_amis[variant["InferenceAmiVersion"]]
        assert ami.cuda >= catalog.serving_image.cuda, variant["VariantName"]
        types = [pool["InstanceType"] for pool in variant.get("InstancePools", [])] or [variant["InstanceType"]]
        assert all(t.split(".")[1] in ami.instance_families for t in types), variant["VariantName"]
    assert {v["InferenceAmiVersion"] for v in _variants(environment)} == {"al2023-ami-sagemaker-inference-gpu-4-1"}


def test_catalog_names_the_base_image_the_dockerfile_pins() -> None:
    # `make pin-base-image` adds the digest beside the tag: the tag is what the catalog names.
    froms = [line.split()[1].split("@")[0] for line in DOCKERFILE.read_text().splitlines() if line.startswith("FROM ")]
    assert load_catalog().serving_image.base_image in froms


def test_every_variant_routes_as_its_config_says(environment) -> None:
    """Issue 52: every environment routes PREFIX_AWARE (the capacity counts a conversation's cached history only
    there); the gateway sends a PrefixAwareId per conversation (config/routing.py)."""
    strategies = [v["RoutingConfig"]["RoutingStrategy"] for v in _variants(environment)]
    assert strategies == [environment.cfg.routing_strategy] * len(environment.cfg.variants) == ["PREFIX_AWARE"] * len(
        environment.cfg.variants
    )


def _rollback_alarms(environment) -> dict[str, dict]:
    (endpoint,) = environment.serving.find_resources("AWS::SageMaker::Endpoint").values()
    names = [
        a["AlarmName"]["Ref"] for a in endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    ]
    alarms = environment.serving.find_resources("AWS::CloudWatch::Alarm")
    return {name: alarms[name]["Properties"] for name in names}


def _watched_metrics(alarm: dict) -> set[str]:
    if "MetricName" in alarm:
        return {alarm["MetricName"]}
    return {m["MetricStat"]["Metric"]["MetricName"] for m in alarm["Metrics"] if "MetricStat" in m}


def test_rollback_alarms_are_5xx_rate_engine_silence_and_first_token_time_per_variant(environment) -> None:
    alarms = _rollback_alarms(environment)
    watched = sorted(tuple(sorted(_watched_metrics(a))) for a in alarms.values())
    per_variant = [
        ("Invocation5XXErrors", "Invocations"),
        ("InstancesInService", "QueueDepth"),  # engine-silent, gated on the capacity watch
        ("TimeToFirstToken",),
        ("Invocation5XXErrors", "Invocations", "TimeToFirstToken"),  # broken-release
    ]
    assert watched == sorted(per_variant * len(environment.cfg.variants))
    assert "ModelLatency" not in json.dumps(alarms)  # the instance-outlier alarm compares instances, not a value


def _minutes_to_alarm(alarm: dict) -> float:
    """The fewest minutes of bad data that put the alarm in ALARM: datapoints to alarm × period."""
    periods = (
        [alarm["Period"]]
        if "Period" in alarm
        else [m["MetricStat"]["Period"] for m in alarm["Metrics"] if "MetricStat" in m]
    )
    return alarm.get("DatapointsToAlarm", alarm["EvaluationPeriods"]) * max(periods) / 60


def test_a_broken_all_at_once_release_rolls_back_within_three_minutes(environment) -> None:
    """Issue 39 item 4: each variant has a rollback alarm that needs at most 3 bad minutes; the others wait
    longer (docs/reference/alarms.md "When each alarm fires")."""
    alarms = _rollback_alarms(environment)
    on_users = {n: a for n, a in alarms.items() if {"Invocation5XXErrors", "TimeToFirstToken"} <= _watched_metrics(a)}
    fast = [name for name, alarm in on_users.items() if _minutes_to_alarm(alarm) <= 3]
    assert len(fast) == len(environment.cfg.variants), {n: _minutes_to_alarm(a) for n, a in alarms.items()}
    for name in fast:
        # 2 of 3: one good minute between two bad ones does not hold it back
        assert (alarms[name]["DatapointsToAlarm"], alarms[name]["EvaluationPeriods"]) == (2, 3)
        assert alarms[name]["TreatMissingData"] == "notBreaching"


def test_first_token_rollback_alarm_is_a_fleet_p95_guarded_by_request_count(environment) -> None:
    """p95 over every request of the variant (the per-request metric), 0 in minutes with too few
    requests, quiet without traffic, and only after consecutive bad minutes."""
    cfg = environment.cfg
    ttft = [a for a in _rollback_alarms(environment).values() if _watched_metrics(a) == {"TimeToFirstToken"}]
    assert len(ttft) == len(cfg.variants)
    for alarm in ttft:
        assert alarm["Threshold"] == cfg.alarms.ttft_p95_ms
        stats = {m["Id"]: m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m}
        assert {s["Stat"] for s in stats.values()} == {"p95", "SampleCount"}
        assert {s["Period"] for s in stats.values()} == {60}
        assert all(s["Metric"]["Namespace"] == "MangaAssist/LLMServing" for s in stats.values())
        assert all(
            {d["Name"] for d in s["Metric"]["Dimensions"]} == {"EndpointName", "VariantName"} for s in stats.values()
        )
        (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
        requests = next(i for i, s in stats.items() if s["Stat"] == "SampleCount")
        p95 = next(i for i, s in stats.items() if s["Stat"] == "p95")
        assert expression["Expression"] == (f"IF({requests} >= {cfg.alarms.ttft_min_requests_per_minute}, {p95}, 0)")
        assert alarm["EvaluationPeriods"] == cfg.alarms.evaluation_minutes
        assert alarm.get("DatapointsToAlarm", alarm["EvaluationPeriods"]) == alarm["EvaluationPeriods"]
        assert alarm["TreatMissingData"] == "notBreaching"
