"""Issue 27 in the prod template: two kinds of alarm, two topics, a required pager, a capacity-ceiling
alarm a schedule cannot raise, missing data stated on every alarm, docs/reference/alarms.md's table from the
code, and a cost guard from the planner's configured scenario. prod is synthesised once (conftest)."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template

from config import load_catalog
from config.scaling_target import ceiling_load
from constructs.alarm_topic import AlarmTopic, AlarmTopicProps, Severity
from constructs.serving_alarms import ServingAlarms
from stacks.serving_props import alarms_props
from workbench.alarm_table import DOCUMENT, alarm_rows, document_table, render

PAGED = {
    "<variant>-5xx-rate",
    "<variant>-ttft-p95",
    "<variant>-broken-release",
    "<variant>-engine-silent",
    "<variant>-queue-depth",
    "<variant>-instances-short",
    "<variant>-scale-out-refused",  # issue 37: target tracking's scale-out refused at once, InstancesShort 0
    "<variant>-shed-share",  # issue 41: a large share turned away to the fallback model now
    "<variant>-pinned-in-peak",  # issue 52: a peak window's floor that cannot rise, above target
}
# notBreaching only where a minute without data is a minute without requests: nothing to judge; and
# engine-silent, whose expression has no data only before the endpoint was ever InService (issue 39).
NO_DATA_IS_NO_REQUESTS = {
    "<variant>-engine-silent",
    "<variant>-5xx-rate",
    "<variant>-ttft-p95",
    "<variant>-broken-release",
    "<variant>-instance-outlier",
    "<variant>-shed-share",
}


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
    assert document_table(DOCUMENT.read_text()) == render(rows), "run: .venv/bin/python -m workbench.alarm_table --write"


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


def test_capacity_ceiling_needs_the_load_above_capacity_while_pinned_at_the_maximum(prod) -> None:
    """Issue 39 item 5: prod tracks ConcurrentRequestsPerModel; the ticket needs it above what an instance
    serves within the SLO (planning.capacity) and target tracking at its maximum with every instance in
    service (the capacity watch's InstancesBelowMax and InstancesShort), 15 minutes in a row."""
    for variant in ("primary", "canary"):
        metric, ceiling = ceiling_load(prod.cfg, variant)
        alarm = _ceiling_alarm(prod.cfg, variant)
        stats = {m["Id"]: m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m}
        assert {(s["Metric"]["MetricName"], s["Stat"]) for s in stats.values()} == {
            ("ConcurrentRequestsPerModel", "Average"),
            ("InstancesBelowMax", "Maximum"),
            ("InstancesShort", "Maximum"),
        }
        (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
        assert expression == f"IF(load > {ceiling:g} AND FILL(below_max, 1) <= 0 AND FILL(short, 1) <= 0, 1, 0)"
        assert (alarm["Threshold"], alarm["EvaluationPeriods"]) == (0, prod.cfg.alarms.capacity_ceiling_minutes)
    assert "at-max-capacity" not in json.dumps(prod.serving.to_json())


def _ceiling_alarm(cfg, variant: str = "primary") -> dict:
    stack = cdk.Stack(cdk.App(), "Alarms")
    ServingAlarms(stack, "Alarms", alarms_props(cfg, load_catalog()))
    (alarm,) = [
        a["Properties"]
        for k, a in Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm").items()
        if k.startswith(f"Alarms{variant}capacityceiling")
    ]
    return alarm


def test_a_schedule_pinning_min_to_max_cannot_raise_the_capacity_ceiling(prod) -> None:
    """The issue's Friday: a window holding min = max = 8. An alarm that compared an instance count with
    max_capacity fired by construction; this one needs the load above capacity as well, and its
    definition is the same with or without the window."""
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
    assert alarm == _ceiling_alarm(unpinned)  # the window is no input: pinned alone cannot raise it
    (expression,) = [m["Expression"] for m in alarm["Metrics"] if "Expression" in m]
    assert expression.startswith(
        f"IF(load > {ceiling_load(prod.cfg, 'primary')[1]:g} AND "
    )  # and the load above capacity


def test_the_budget_is_the_configs_figure(prod) -> None:
    """The planner writes alarms.monthly_budget_usd and checks it (tests/workbench/planner/test_budget_limit.py);
    synth only reads it, in whole dollars."""
    expected = round(prod.cfg.alarms.monthly_budget_usd)
    prod.serving.has_resource_properties(
        "AWS::Budgets::Budget", {"Budget": Match.object_like({"BudgetLimit": {"Amount": expected, "Unit": "USD"}})}
    )
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
    props = AlarmTopicProps(
        encryption_key=kms.Key(stack, "Key"),
        display_name="x",
        emails=("oncall@example.com",),
        https_endpoints=("https://events.pagerduty.com/integration/abc/enqueue",),
        existing_topic_arn=existing,
    )
    topic = AlarmTopic(stack, "Paging", props)
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


def without_pager(raw: dict) -> None:  # prod.yaml as a non-production environment that pages nobody
    raw["alarms"].pop("paging")
    raw["alarms"].pop("paging_required")
    raw["production"] = False


@pytest.mark.parametrize("env_name", ["staging", "dev"])
def test_paging_required_decides_who_must_page_not_the_environments_name(problems, env_name) -> None:
    """Issue 39 item 7: a field of the config, not a list of environment names; dev may page nobody."""
    assert not [p for p in problems(without_pager, env_name) if p.startswith("alarms.")]

    def dev_that_must_page(raw: dict) -> None:
        raw["alarms"].pop("paging", None)
        raw["production"] = False

    assert [p for p in problems(dev_that_must_page, "dev") if p.startswith("alarms.paging: dev pages nobody")]


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
    found = problems(lambda raw: raw["alarms"].update(capacity_ceiling_minutes=7))
    assert (
        "alarms.capacity_ceiling_minutes: must exceed planning.provisioning_minutes + 3 (the minutes target "
        "tracking needs to see the load and the new instances to arrive) = 7, or every healthy scale-out "
        "raises it, got 7"
    ) in found
