"""Two kinds of alarm, two topics (docs/reference/alarms.md "Two destinations").

- PAGE: what users feel now or within minutes (errors, time to first token, a silent engine, a
  critical queue, capacity that did not arrive) goes to the paging topic: someone is woken.
- TICKET: the rest (client errors, the capacity ceiling, cost, caches, GPU and CPU pressure) goes to
  the ticket topic: someone looks during working hours.

Every alarm is made by `define_alarm` with its `Route` (severity and a one-line reason) and its
`MissingData` (treatment and a one-line reason), so both stay next to the definition and
workbench/alarm_table.py can print them. Each topic is KMS-encrypted, SSL-only, and subscribed from
`alarms.paging` / `alarms.ticket`; an existing `topic_arn` there receives the same notifications.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from aws_cdk import Aws
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from constructs import Construct

CLOUDWATCH = "cloudwatch.amazonaws.com"
BUDGETS = "budgets.amazonaws.com"
# What SNS needs from a service that publishes to a topic encrypted with a customer-managed key (SNS
# developer guide, "Enable compatibility between event sources from AWS services and encrypted topics").
PUBLISH_TO_ENCRYPTED_TOPIC = ("kms:Decrypt", "kms:GenerateDataKey*")


class Severity(Enum):
    PAGE = "page"
    TICKET = "ticket"


@dataclass(frozen=True)
class Route:
    severity: Severity
    why: str  # one line: why this alarm wakes someone, or why it can wait


def page(why: str) -> Route:
    return Route(Severity.PAGE, why)


def ticket(why: str) -> Route:
    return Route(Severity.TICKET, why)


@dataclass(frozen=True)
class MissingData:
    treatment: cloudwatch.TreatMissingData
    why: str  # one line: what a minute without data means here, and why it cannot flap the alarm


@dataclass(frozen=True)
class RoutedAlarm:
    alarm: cloudwatch.Alarm
    route: Route
    missing: MissingData


def define_alarm(
    scope: Construct,
    id: str,
    metric: cloudwatch.IMetric,
    *,
    route: Route,
    missing: MissingData,
    description: str,
    threshold: float,
    periods: int,
    comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    datapoints: int | None = None,  # M of the N `periods`; None: all of them
) -> RoutedAlarm:
    """An alarm with its destination and its missing-data treatment always stated (TreatMissingData is
    written into every template); its description starts with the severity, as the notification does."""
    alarm = metric.create_alarm(
        scope,
        id,
        alarm_description=f"[{route.severity.value}] {description}",
        threshold=threshold,
        evaluation_periods=periods,
        datapoints_to_alarm=datapoints,
        comparison_operator=comparison,
        treat_missing_data=missing.treatment,
    )
    return RoutedAlarm(alarm, route, missing)


@dataclass(frozen=True)
class AlarmTopicProps:
    """Who hears the alarms routed to the topic (config `alarms.paging` / `alarms.ticket`)."""

    encryption_key: kms.IKey  # the topic's; CloudWatch (and AWS Budgets when allowed) may use it to publish
    display_name: str
    emails: tuple[str, ...] = ()  # email subscriptions, each confirmed by its owner
    https_endpoints: tuple[str, ...] = ()  # HTTPS subscriptions (PagerDuty, Opsgenie)
    # An existing topic that receives the same notifications; its policy is its owner's.
    existing_topic_arn: str | None = None


class AlarmTopic(Construct):
    """One encrypted topic, its subscriptions, and (optionally) an existing topic that gets the same."""

    def __init__(self, scope: Construct, id: str, props: AlarmTopicProps) -> None:
        super().__init__(scope, id)
        key = props.encryption_key
        self._key = key
        self.topic = sns.Topic(self, "Topic", master_key=key, enforce_ssl=True, display_name=props.display_name)
        key.grant(iam.ServicePrincipal(CLOUDWATCH), *PUBLISH_TO_ENCRYPTED_TOPIC)
        for address in props.emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
        for url in props.https_endpoints:
            self.topic.add_subscription(subscriptions.UrlSubscription(url, protocol=sns.SubscriptionProtocol.HTTPS))
        self._actions = [cloudwatch_actions.SnsAction(self.topic)]
        if props.existing_topic_arn is not None:  # its policy is its owner's: docs/reference/alarms.md "Two destinations"
            existing = sns.Topic.from_topic_arn(self, "Existing", props.existing_topic_arn)
            self._actions.append(cloudwatch_actions.SnsAction(existing))

    def notify(self, alarms: Iterable[cloudwatch.Alarm]) -> None:
        """Send ALARM and OK transitions of these alarms here, and let CloudWatch publish them.

        The topic policy (which `enforce_ssl` creates) replaces the topic's default access policy,
        and that default is what lets same-account CloudWatch alarms publish; without this statement
        no alarm would reach anyone (AWS re:Post knowledge center
        "cloudwatch-receive-sns-for-alarm-trigger"). Scoped to this account and to these alarms.
        """
        alarms = list(alarms)
        if not alarms:
            return
        for alarm in alarms:
            alarm.add_alarm_action(*self._actions)
            alarm.add_ok_action(*self._actions)
        self._allow_publish(
            "AllowThisAccountsAlarmsToPublish", CLOUDWATCH, [alarm.alarm_arn for alarm in alarms], "sns:Publish"
        )

    def allow_budgets(self) -> None:
        """Let AWS Budgets in this account publish here: the topic policy the Cost Management user guide
        gives ("Creating an Amazon SNS topic for budget notifications": aws:SourceAccount and aws:SourceArn
        arn:aws:budgets::<account>:*), and the key, as for every AWS service that publishes to an encrypted
        topic (SNS developer guide, as above). The KMS statement has no condition: neither guide documents
        a condition key AWS Budgets sets on its KMS requests, and one it does not set would drop every
        notification without an error."""
        self._allow_publish(
            "AllowThisAccountsBudgetsToPublish",
            BUDGETS,
            [f"arn:{Aws.PARTITION}:budgets::{Aws.ACCOUNT_ID}:*"],
            "SNS:Publish",  # spelt as the guide spells it; IAM actions are case-insensitive
        )
        self._key.grant(iam.ServicePrincipal(BUDGETS), *PUBLISH_TO_ENCRYPTED_TOPIC)

    @property
    def policy(self) -> sns.TopicPolicy:
        """The topic policy `enforce_ssl` created, which the publish statements join."""
        return self.topic.node.find_child("Policy")

    def _allow_publish(self, sid: str, service: str, source_arns: list[str], action: str) -> None:
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid=sid,
                principals=[iam.ServicePrincipal(service)],
                actions=[action],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": source_arns},
                },
            )
        )


def route_alarms(routed: Iterable[RoutedAlarm], *, paging: AlarmTopic, tickets: AlarmTopic) -> None:
    """Each alarm to the topic its severity names."""
    routed = list(routed)
    paging.notify(r.alarm for r in routed if r.route.severity is Severity.PAGE)
    tickets.notify(r.alarm for r in routed if r.route.severity is Severity.TICKET)
