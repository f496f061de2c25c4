"""The environment's notification topic: KMS-encrypted, SSL-only, subscriptions from config."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions

from constructs import Construct


class AlarmTopic(Construct):
    def __init__(self, scope: Construct, id: str, *, encryption_key: kms.IKey, email_subscriptions: list[str]) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(self, "Topic", master_key=encryption_key, enforce_ssl=True)
        # CloudWatch publishes alarm notifications to the encrypted topic with this key.
        encryption_key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        for address in email_subscriptions:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
        self._action = cloudwatch_actions.SnsAction(self.topic)

    def notify(self, alarm: cloudwatch.Alarm) -> None:
        """Send ALARM and OK transitions to the topic."""
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
