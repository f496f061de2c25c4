"""Capacity that does not arrive pages someone. A function run every minute publishes, per variant, the
instances short of what was asked, recently failed scaling activities and whether target tracking's
scale-out was refused (constructs/capacity_watch_handler/handler.py: AWS sends no event for a failed
activity and has no instance-count metric); these alarms per variant read them:

- `<variant>-instances-short` (page): InstancesShort > 0 for planning.provisioning_minutes +
  SHORT_SLACK_MINUTES in a row, so a normal scale-out stays quiet; the page arrives within provisioning + 6
  minutes of the raise. Missing data breaches: a silent watch is blind to exactly this failure.
- `<variant>-scaling-failed` (autoscaled, ticket): FailedScalingActivities > 0, so a refused scale-out or
  failed scheduled raise is written down with its StatusMessage. No page: it may be a scale-in, or one a
  retry or the fallback pool fulfilled. Missing data keeps the state (the metric is a 15-minute level).
- `<variant>-scale-out-refused` (autoscaled, page): ScaleOutRefused = 1 for REFUSED_MINUTES: load above
  target (AlarmHigh in ALARM) and the last attempt refused. A refusal at once (quota, validation) never
  moves the desired count, so instances-short stays 0. Two minutes: one sample may fall between a transient
  refusal and its successful retry. Not a rollback alarm: a refused scale-out is not the release's fault.

The schedule starts once the endpoint exists and the alarms once the schedule does: a first deploy pages nobody.
"""

from __future__ import annotations

import json
from pathlib import Path

from aws_cdk import ArnFormat, CfnResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from config.domain.release_calendar import WEEKDAYS, ReleaseCalendar
from constructs import Construct, IConstruct
from constructs.alarm_topic import MissingData, RoutedAlarm, define_alarm, page, ticket
from constructs.capacity_watch_handler.handler import FAILED_ACTIVITIES, INSTANCES_SHORT, SCALE_OUT_REFUSED
from constructs.nag import INLINE_POLICY_REASON, acknowledge, arn_in_finding
from constructs.variant_metrics import VariantMetrics

HANDLER_DIR = Path(__file__).resolve().parent / "capacity_watch_handler"
NAMESPACE = "MangaAssist/Capacity"
# Beyond the provisioning time: two minutes for a scale-out's decision and its activity to start, two for a
# slower-than-planned instance, before a short fleet pages.
SHORT_SLACK_MINUTES = 4
WATCH_SILENT_IS_SHORT = MissingData(
    cloudwatch.TreatMissingData.BREACHING,
    "a watch that stopped reporting is blind to exactly this failure: its silence pages after the same "
    "periods, and a gap never clears it",
)


def short_minutes(provisioning_minutes: int) -> int:
    """Minutes short before a page: the plan's provisioning time + SHORT_SLACK_MINUTES."""
    return provisioning_minutes + SHORT_SLACK_MINUTES


KEEP_STATE = MissingData(
    cloudwatch.TreatMissingData.IGNORE,
    "the metric is a 15-minute level: a lost sample must not clear it and re-raise it a minute later; a silent "
    "watch pages through instances-short",
)
# Minutes in a row ScaleOutRefused must be 1 before a page: one sample may be a transient refusal its retry fixes.
REFUSED_MINUTES = 2
REFUSAL_KEEPS_STATE = MissingData(
    cloudwatch.TreatMissingData.IGNORE,
    "a lost sample neither pages nor clears a page that stands; a silent watch pages through instances-short",
)
# Application Auto Scaling names a target-tracking policy's alarms after the scalable target
# ("TargetTracking-endpoint/<endpoint>/variant/<variant>-AlarmHigh-<id>", as DescribeScalingPolicies
# returns them): the watch may read only those of this endpoint.
TRACKING_ALARM_PREFIX = "TargetTracking-endpoint/{endpoint}/variant/"


class CapacityWatch(Construct):
    """`routed` go to the paging or the ticket topic (the stack passes them to route_alarms)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        variant_names: list[str],
        scaled_variant_names: list[str],
        encryption_key: kms.IKey,
        starts_after: IConstruct,
        provisioning_minutes: int,
        peak_windows: str = "[]",
    ) -> None:
        """`provisioning_minutes`: the plan's (planning.provisioning_minutes), which sets the page's delay;
        `peak_windows`: the release calendar's windows as the handler reads them (peak_windows_json)."""
        super().__init__(scope, id)
        self.short_minutes = short_minutes(provisioning_minutes)
        self.function = self._function(endpoint_name, variant_names, encryption_key, peak_windows)
        self.rule = events.Rule(
            self,
            "EveryMinute",
            description=f"Capacity watch of {endpoint_name}: instances short, failed and refused scaling",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            # A missed minute is not retried: the next one reads the same state afresh.
            targets=[targets.LambdaFunction(self.function, retry_attempts=0, max_event_age=Duration.minutes(1))],
        )
        self.rule.node.add_dependency(starts_after)
        self.routed: list[RoutedAlarm] = []
        for variant in variant_names:
            self._alarms(VariantMetrics(endpoint_name, variant), scaled=variant in scaled_variant_names)
        for routed in self.routed:
            routed.alarm.node.add_dependency(self.rule)

    def _function(
        self, endpoint_name: str, variant_names: list[str], key: kms.IKey, peak_windows: str
    ) -> lambda_.Function:
        role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        log_group = logs.LogGroup(
            self,
            "Logs",
            retention=logs.RetentionDays.THREE_MONTHS,
            encryption_key=key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"]),
            role=role,
            log_group=log_group,
            timeout=Duration.seconds(30),  # a few API calls; the next run is a minute later
            description=f"Capacity watch of {endpoint_name}: instances short, failed and refused scaling",
            environment={
                "ENDPOINT_NAME": endpoint_name,
                "VARIANT_NAMES": ",".join(variant_names),
                "METRIC_NAMESPACE": NAMESPACE,
                "PEAK_WINDOWS": peak_windows,
            },
        )
        # CDK makes the function DependsOn its role although the Role GetAtt already orders them; cfn-lint
        # warns W3005 about that redundancy (as for the image build's functions). Said here, not switched off.
        CfnResource.add_metadata(function.node.default_child, "cfn-lint", {"config": {"ignore_checks": ["W3005"]}})
        for statement in watch_statements(Stack.of(self), endpoint_name):
            role.add_to_policy(statement)
        self._acknowledge(role, function, endpoint_name)
        return function

    def _alarms(self, metrics: VariantMetrics, *, scaled: bool) -> None:
        name = metrics.variant_name
        short = metrics.metric(INSTANCES_SHORT, namespace=NAMESPACE, statistic="Maximum")
        self.routed.append(
            define_alarm(
                self,
                f"{name}-instances-short",
                short,
                route=page("capacity asked for did not arrive: the fleet is short now or at the next peak"),
                missing=WATCH_SILENT_IS_SHORT,
                description=f"{name}: fewer instances in service than asked (desired count or the schedule's "
                f"floor) for {self.short_minutes} min, or the capacity watch stopped reporting. Run "
                "`bin/ops scaling-history ENV` and `bin/ops status ENV`; see docs/reference/alarms.md",
                threshold=0,
                periods=self.short_minutes,
            )
        )
        if not scaled:
            return
        self._refused(metrics)
        failed = metrics.metric(FAILED_ACTIVITIES, namespace=NAMESPACE, statistic="Maximum")
        self.routed.append(
            define_alarm(
                self,
                f"{name}-scaling-failed",
                failed,
                route=ticket(
                    "instances-short or scale-out-refused page if the capacity stays missing; the StatusMessage "
                    "is for the ticket"
                ),
                missing=KEEP_STATE,
                description=f"{name}: a scaling activity Failed or was Unfulfilled in the last 15 min "
                "(quota, insufficient capacity). Its StatusMessage: `bin/ops scaling-history ENV --days 1`",
                threshold=0,
                periods=1,
            )
        )

    def _refused(self, metrics: VariantMetrics) -> None:
        name = metrics.variant_name
        refused = metrics.metric(SCALE_OUT_REFUSED, namespace=NAMESPACE, statistic="Maximum")
        self.routed.append(
            define_alarm(
                self,
                f"{name}-scale-out-refused",
                refused,
                route=page(
                    "load is above target tracking's target and SageMaker refused the instances: nothing is "
                    "coming and instances-short cannot see it"
                ),
                missing=REFUSAL_KEEPS_STATE,
                description=f"{name}: target tracking wants more instances (its AlarmHigh in ALARM) and its last "
                f"scale-out was refused (Failed or Unfulfilled), for {REFUSED_MINUTES} min. Read the StatusMessage: "
                "`bin/ops scaling-history ENV --days 1`; see docs/reference/alarms.md",
                threshold=0,
                periods=REFUSED_MINUTES,
            )
        )

    def _acknowledge(self, role: iam.Role, function: lambda_.Function, endpoint_name: str) -> None:
        acknowledge(
            role,
            "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            "Application Auto Scaling's Describe* calls take no resource (Service Authorization Reference) and "
            "cloudwatch:PutMetricData takes none either; PutMetricData is limited by its cloudwatch:namespace "
            "condition to MangaAssist/Capacity",
        )
        tracking_alarms = TRACKING_ALARM_PREFIX.format(endpoint=endpoint_name)
        acknowledge(
            role,
            f"AwsSolutions::AwsSolutions-IAM5[Resource::{arn_in_finding(self, 'cloudwatch', f'alarm:{tracking_alarms}*')}]",
            "cloudwatch:DescribeAlarms on this endpoint's target-tracking alarms only: Application Auto Scaling "
            "names them, ending in an ID it assigns, so only their prefix is known",
        )
        acknowledge(role, "NIST.800.53.R5::NIST.800.53.R5-IAMNoInlinePolicy", INLINE_POLICY_REASON)
        for rule, reason in (
            (
                "NIST.800.53.R5::NIST.800.53.R5-LambdaConcurrency",
                "one short run a minute; new accounts get reduced Lambda concurrency quotas and Lambda keeps a "
                "minimum unreserved, so reserving could fail the first deploy",
            ),
            (
                "NIST.800.53.R5::NIST.800.53.R5-LambdaDLQ",
                "a failed minute is not worth keeping: the next run reads the state afresh, and a watch that keeps "
                "failing publishes nothing, which the instances-short alarms treat as breaching and page",
            ),
            (
                "NIST.800.53.R5::NIST.800.53.R5-LambdaInsideVPC",
                "calls only the SageMaker, Application Auto Scaling and CloudWatch APIs; this project has no VPC",
            ),
        ):
            acknowledge(function, rule, reason)


def watch_statements(stack: Stack, endpoint_name: str) -> list[iam.PolicyStatement]:
    """Least privilege, as far as each action allows (Service Authorization Reference, "Actions, resources,
    and condition keys" for SageMaker, Application Auto Scaling and CloudWatch; the same table as cfn-lint's
    data/AdditionalSpecs/Policies.json): DescribeEndpoint on this endpoint only (SageMaker writes endpoint
    ARNs in lower case); Application Auto Scaling's Describe* have no resource type; DescribeAlarms takes
    the `alarm` resource type, so only this endpoint's target-tracking alarms (the API reference: a
    narrower scope than * cannot return composite alarms, which these are not); PutMetricData has no
    resource but the cloudwatch:namespace condition."""
    endpoint = stack.format_arn(service="sagemaker", resource="endpoint", resource_name=endpoint_name.lower())
    tracking_alarms = stack.format_arn(
        service="cloudwatch",
        resource="alarm",
        resource_name=TRACKING_ALARM_PREFIX.format(endpoint=endpoint_name) + "*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    return [
        iam.PolicyStatement(actions=["sagemaker:DescribeEndpoint"], resources=[endpoint]),
        iam.PolicyStatement(
            actions=[
                "application-autoscaling:DescribeScalableTargets",
                "application-autoscaling:DescribeScalingActivities",
                "application-autoscaling:DescribeScalingPolicies",
            ],
            resources=["*"],
        ),
        iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"], resources=[tracking_alarms]),
        iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE}},
        ),
    ]


def peak_windows_json(calendar: ReleaseCalendar) -> str:
    """The release calendar's windows (audiences' evenings every day, releases on their weekdays) as the
    watch's handler reads them (PEAK_WINDOWS): zone, weekdays (Monday 0), start minute, length in minutes."""
    windows = []
    for audience in calendar.audiences.values():
        start, end = (_minute_of_day(audience.evening.start), _minute_of_day(audience.evening.end))
        length = (end - start) % (24 * 60)
        windows.append({"timezone": audience.timezone, "weekdays": list(range(7)), "start": start, "minutes": length})
    for release in calendar.releases:
        days = [WEEKDAYS.index(day) for day in release.weekdays]
        start, length = _minute_of_day(release.at), round(release.hours * 60)
        windows.append({"timezone": release.timezone, "weekdays": days, "start": start, "minutes": length})
    return json.dumps(windows, separators=(",", ":"))


def _minute_of_day(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)
