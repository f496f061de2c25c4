"""Issue 27 in the prod template: two kinds of alarm, two topics, a required pager, a capacity-ceiling
alarm a schedule cannot raise, missing data stated on every alarm, docs/alarms.md's table from the
code, and a cost guard from the planner's configured scenario. prod is synthesised once (conftest)."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template

from config import load_catalog
from config.schema import AlarmDestination
from constructs.alarm_topic import AlarmTopic, Severity
from constructs.serving_alarms import ServingAlarms
from planner.build import build_plan
from planner.environment_traffic import traffic_for
from tools.alarm_table import DOCUMENT, alarm_rows, document_table, render

PAGED = {
    "<variant>-5xx-rate",
    "<variant>-ttft-p95",
    "<variant>-engine-silent",
    "<variant>-queue-depth",
    "<variant>-instances-short",
}
# notBreaching only where a minute without data is a minute without requests: nothing to judge.
NO_DATA_IS_NO_REQUESTS = {"<variant>-5xx-rate", "<variant>-ttft-p95", "<variant>-instance-outlier"}


def _generic(alarm_id: str) -> str:
    return "<variant>-" + alarm_id.split("-", 1)[1]


def _topics(prod) -> dict[str, str]:
    """{"page": logical ID of the paging topic, "ticket": of the ticket topic}."""
    topics = prod.serving.find_resources("AWS::SNS::Topic")
    return {
        "page": next(t for t in topics if t.startswith("PagingTopic")),
        "ticket": next(t for t in topics if t.startswith("TicketsTopic")),
    }


def _logical_id(prod, routed) -> str:
    stack = prod.serving_stack
    return stack.resolve(stack.get_logical_id(routed.alarm.node.default_child))


def test_the_table_in_docs_alarms_md_is_what_prods_code_defines(prod) -> None:
    rows = alarm_rows(prod.serving_stack, prod.serving.to_json(), [v.name for v in prod.cfg.variants])
    assert document_table(DOCUMENT.read_text()) == render(rows), "run: .venv/bin/python -m tools.alarm_table --write"


def test_every_alarm_goes_to_the_topic_its_severity_names(prod) -> None:
    topics = _topics(prod)
    alarms = prod.serving.find_resources("AWS::CloudWatch::Alarm")
    routed = {_logical_id(prod, r): r for r in prod.serving_stack.routed_alarms}
    notifying = {k for k in alarms if "Autoscaling" not in k}  # step-scaling alarms trigger policies
    assert set(routed) == notifying, "every notifying alarm is defined with a route"
    for logical_id, r in routed.items():
        topic = {"Ref": topics[r.route.severity.value]}
        assert alarms[logical_id]["Properties"]["AlarmActions"] == [topic]
        assert alarms[logical_id]["Properties"]["OKActions"] == [topic]
        assert r.route.why and "\n" not in r.route.why
        assert alarms[logical_id]["Properties"]["AlarmDescription"].startswith(f"[{r.route.severity.value}] ")


def test_paging_is_what_users_feel_now_or_within_minutes(prod) -> None:
    paged = {_generic(r.alarm.node.id) for r in prod.serving_stack.routed_alarms if r.route.severity is Severity.PAGE}
    assert paged == PAGED


def test_every_alarm_in_the_prod_template_states_how_it_treats_missing_data(prod) -> None:
    for alarm in prod.serving.find_resources("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["TreatMissingData"] in ("breaching", "notBreaching", "ignore", "missing")


def test_no_single_missing_sample_can_flap_an_alarm(prod) -> None:
    """ignore keeps the state through a gap; breaching needs several periods (one missing sample cannot
    raise it) and never clears on a gap; notBreaching only where no data means no requests."""
    alarms = prod.serving.find_resources("AWS::CloudWatch::Alarm")
    for r in prod.serving_stack.routed_alarms:
        properties = alarms[_logical_id(prod, r)]["Properties"]
        treatment = properties["TreatMissingData"]
        assert treatment.lower() == r.missing.treatment.value.replace("_", "").lower() and r.missing.why
        if treatment == "breaching":
            assert properties["EvaluationPeriods"] >= 3
        elif treatment == "notBreaching":
            assert _generic(r.alarm.node.id) in NO_DATA_IS_NO_REQUESTS
        else:
            assert treatment == "ignore"


def test_capacity_ceiling_reads_the_tracked_load_well_above_its_target(prod) -> None:
    """prod tracks ConcurrentRequestsPerModel at 10 per instance: 130 % of it (13) for 15 minutes."""
    for variant in ("primary", "canary"):
        prod.serving.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": "AWS/SageMaker",
                "MetricName": "ConcurrentRequestsPerModel",
                "Statistic": "Average",
                "Dimensions": Match.array_with([{"Name": "VariantName", "Value": variant}]),
                "Threshold": 13,
                "EvaluationPeriods": 15,
                "ComparisonOperator": "GreaterThanThreshold",
                "AlarmActions": [{"Ref": _topics(prod)["ticket"]}],
            },
        )
    assert "at-max-capacity" not in json.dumps(prod.serving.to_json())


def _ceiling_alarm(cfg) -> dict:
    stack = cdk.Stack(cdk.App(), "Alarms")
    ServingAlarms(stack, "Alarms", cfg=cfg, vcpus={v.name: 4 for v in cfg.variants})
    (alarm,) = [
        a["Properties"]
        for k, a in Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm").items()
        if k.startswith("Alarmsprimarycapacityceiling")
    ]
    return alarm


def test_a_schedule_pinning_min_to_max_cannot_raise_the_capacity_ceiling(prod) -> None:
    """The issue's Friday: a window holding min = max = 8. The old alarm compared an instance count with
    max_capacity, so it fired by construction; the new one reads only the load, and its definition is
    the same with or without the window (a blue/green bake, which adds a second fleet under the same
    dimensions, changes no input of it either)."""
    scaling = prod.cfg.autoscaling["primary"]
    window = scaling.schedules[0].model_copy(update={"min_capacity": 8, "max_capacity": 8})
    unpinned = prod.cfg.model_copy(update={"autoscaling": {"primary": scaling.model_copy(update={"schedules": []})}})
    pinned = prod.cfg.model_copy(
        update={
            "autoscaling": {
                "primary": scaling.model_copy(update={"min_capacity": 8, "max_capacity": 8, "schedules": [window]})
            }
        }
    )
    alarm = _ceiling_alarm(pinned)
    assert alarm == _ceiling_alarm(unpinned)
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SageMaker", "ConcurrentRequestsPerModel")
    assert "Metrics" not in alarm  # no instance count or capacity joins the load in a metric-math expression
    assert {d["Name"] for d in alarm["Dimensions"]} == {"EndpointName", "VariantName"}
    assert alarm["Threshold"] > 11  # above the target the pinned fleet is tracked to: at target it is quiet


def test_the_budget_is_the_configured_plans_cost_times_the_margin(prod) -> None:
    cfg, catalog = prod.cfg, load_catalog()
    plan = build_plan(cfg, catalog, traffic_for(cfg.planning.traffic))
    expected = round(plan.scenarios["configured"].total.monthly_cost_usd * cfg.alarms.budget_margin)
    (budget,) = prod.serving.find_resources("AWS::Budgets::Budget").values()
    data = budget["Properties"]["Budget"]
    assert data["BudgetLimit"] == {"Amount": expected, "Unit": "USD"}
    assert (data["BudgetType"], data["TimeUnit"]) == ("COST", "MONTHLY")
    assert data["FilterExpression"] == {"Tags": {"Key": "Environment", "Values": ["prod"], "MatchOptions": ["EQUALS"]}}
    ticket = {"Ref": _topics(prod)["ticket"]}
    notifications = budget["Properties"]["NotificationsWithSubscribers"]
    assert {n["Notification"]["NotificationType"] for n in notifications} == {"FORECASTED", "ACTUAL"}
    assert all(n["Subscribers"] == [{"SubscriptionType": "SNS", "Address": ticket}] for n in notifications)
    assert any(d.startswith("TicketsTopicPolicy") for d in budget["DependsOn"])
    assert prod.serving.find_outputs("MonthlyBudgetUsd")["MonthlyBudgetUsd"]["Value"] == str(expected)


def test_budgets_may_publish_to_the_ticket_topic_and_use_its_key(prod) -> None:
    ticket = _topics(prod)["ticket"]
    (policy,) = [
        p
        for p in prod.serving.find_resources("AWS::SNS::TopicPolicy").values()
        if p["Properties"]["Topics"] == [{"Ref": ticket}]
    ]
    (budgets,) = [
        s
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Principal") == {"Service": "budgets.amazonaws.com"}
    ]
    assert budgets["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert ":budgets::" in json.dumps(budgets["Condition"]["ArnLike"]["aws:SourceArn"])
    keys = json.dumps(prod.serving.find_resources("AWS::KMS::Key"))
    assert "budgets.amazonaws.com" in keys
    paging = _topics(prod)["page"]
    assert "budgets.amazonaws.com" not in json.dumps(
        [
            p
            for p in prod.serving.find_resources("AWS::SNS::TopicPolicy").values()
            if p["Properties"]["Topics"] == [{"Ref": paging}]
        ]
    )


def test_a_destination_subscribes_addresses_and_pagers_and_notifies_an_existing_topic() -> None:
    stack = cdk.Stack(cdk.App(), "Topics", env=cdk.Environment(account="222222222222", region="ap-northeast-1"))
    existing = "arn:aws:sns:ap-northeast-1:222222222222:oncall"
    destination = AlarmDestination(
        emails=["oncall@example.com"],
        https_endpoints=["https://events.pagerduty.com/integration/abc/enqueue"],
        topic_arn=existing,
    )
    topic = AlarmTopic(stack, "Paging", encryption_key=kms.Key(stack, "Key"), destination=destination, display_name="x")
    metric = cloudwatch.Metric(namespace="N", metric_name="M")
    topic.notify([metric.create_alarm(stack, "Alarm", threshold=1, evaluation_periods=1)])
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "oncall@example.com"})
    template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "https", "Endpoint": "https://events.pagerduty.com/integration/abc/enqueue"},
    )
    (alarm,) = template.find_resources("AWS::CloudWatch::Alarm").values()
    assert alarm["Properties"]["AlarmActions"][1] == existing
    assert alarm["Properties"]["OKActions"][1] == existing


@pytest.mark.parametrize("env_name", ["prod", "staging"])
def test_prod_and_staging_refuse_to_page_nobody_and_say_how_to_page(problems, env_name) -> None:
    found = problems(lambda raw: raw["alarms"].pop("paging"), env_name)
    (problem,) = [p for p in found if p.startswith("alarms.paging")]
    assert problem.startswith(f"alarms.paging: {env_name} pages nobody: give one of alarms.paging.emails")
    for form in ("alarms.paging.https_endpoints", "PagerDuty or Opsgenie", "alarms.paging.topic_arn", "arn:aws:sns:"):
        assert form in problem


def test_dev_may_page_nobody(problems) -> None:
    def without_pager(raw: dict) -> None:
        raw["alarms"].pop("paging")
        raw["production"] = False

    assert not [p for p in problems(without_pager, "dev") if p.startswith("alarms.")]


def test_an_existing_topic_must_be_in_the_environments_region_and_account(problems) -> None:
    elsewhere = "arn:aws:sns:us-east-1:222222222222:oncall"
    found = problems(lambda raw: raw["alarms"]["paging"].update(topic_arn=elsewhere))
    assert (
        "alarms.paging.topic_arn: must be a topic in this environment's region ap-northeast-1 and account "
        f"222222222222 (alarms publish only to topics in their own region), got '{elsewhere}'"
    ) in found
    here = "arn:aws:sns:ap-northeast-1:222222222222:oncall"
    assert not [p for p in problems(lambda raw: raw["alarms"].update(ticket={"topic_arn": here})) if "topic_arn" in p]


def test_the_ceiling_waits_longer_than_a_scale_out(problems) -> None:
    found = problems(lambda raw: raw["alarms"].update(capacity_ceiling_minutes=11))
    assert (
        "alarms.capacity_ceiling_minutes: must exceed planning.provisioning_minutes + 3 (the minutes target "
        "tracking needs to see the load and the new instances to arrive) = 11, or every healthy scale-out "
        "raises it, got 11"
    ) in found
