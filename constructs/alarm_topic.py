"""The environment's notification topic: KMS-encrypted, SSL-only, subscriptions from config."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Aws
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from constructs import Construct

CLOUDWATCH = "cloudwatch.amazonaws.com"


class AlarmTopic(Construct):
    def __init__(self, scope: Construct, id: str, *, encryption_key: kms.IKey, email_subscriptions: list[str]) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(self, "Topic", master_key=encryption_key, enforce_ssl=True)
        # CloudWatch publishes alarm notifications to the encrypted topic with this key.
        encryption_key.grant(iam.ServicePrincipal(CLOUDWATCH), "kms:Decrypt", "kms:GenerateDataKey*")
        for address in email_subscriptions:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
        self._action = cloudwatch_actions.SnsAction(self.topic)

    def notify(self, alarms: Iterable[cloudwatch.Alarm]) -> None:
        """Send ALARM and OK transitions of these alarms to the topic, and let CloudWatch publish them.

        The topic policy (which `enforce_ssl` creates) replaces the topic's default access policy,
        and that default is what lets same-account CloudWatch alarms publish; without this statement
        no alarm would reach anyone (AWS re:Post knowledge center
        "cloudwatch-receive-sns-for-alarm-trigger"). Scoped to this account and to these alarms.
        """
        alarms = list(alarms)
        for alarm in alarms:
            alarm.add_alarm_action(self._action)
            alarm.add_ok_action(self._action)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowThisAccountsAlarmsToPublish",
                principals=[iam.ServicePrincipal(CLOUDWATCH)],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": [alarm.alarm_arn for alarm in alarms]},
                },
            )
        )
