"""`verify`: after a deploy, does the live endpoint match what the stack and the config say?

The endpoint config the stack expects catches a silent blue/green auto-rollback; unconfirmed alarm
subscriptions hear nothing (docs/reference/alarms.md "Two destinations").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from config import naming
from config.schema import Variant
from config.variant_lookup import share_percent
from ops.operations.alarm_data import alarm_data_checks
from ops.operations.alarms import firing_alarms
from ops.operations.endpoint import LiveEndpoint, LiveVariant, read_endpoint
from ops.operations.environment import EmergencyAccess, Environment
from ops.operations.errors import error_code
from ops.operations.images import image_in_ecr
from ops.operations.output import Console, percent
from ops.operations.stack import ServingOutputs, read_image_outputs, read_serving_outputs, stack_outputs

HEALTHY_STACK_STATES = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"}
# The serving stack's topic outputs; a stack deployed before issue 27 has the one AlarmTopicArn.
TOPIC_OUTPUTS = {naming.OUTPUT_ALARM_TOPIC_ARN: "paging", naming.OUTPUT_TICKET_TOPIC_ARN: "ticket"}
# What ListSubscriptionsByTopic gives as SubscriptionArn until the endpoint confirms (SNS API reference).
PENDING = "PendingConfirmation"


@dataclass(frozen=True)
class Check:
    passed: bool
    text: str


NOT_COMPARED = (
    "instance types, image tags and shares not compared with the config: it is invalid (the warning above names "
    "its first problem); fix it, then verify again"
)


def verify(access: EmergencyAccess, check_weights: bool) -> list[Check]:
    """Every check; with an invalid config, those that need none and one failed check saying so."""
    identity, cfg, clients = access.identity, access.cfg, access.clients
    outputs = read_serving_outputs(clients.cloudformation, identity.name)
    live = read_endpoint(clients.sagemaker, identity.endpoint_name, identity.name)
    checks = [*_stack_checks(outputs, identity.endpoint_name), *_endpoint_checks(live, outputs)]
    running = {v.name: v for v in live.variants}
    wanted = identity.variant_names
    names = f"variants live: {', '.join(sorted(running))}; config: {', '.join(sorted(wanted))}"
    checks.append(Check(set(wanted) == set(running), names))
    ecr = clients.client("ecr")
    if cfg is None:
        checks += [check for name in sorted(set(wanted) & set(running)) for check in _live_checks(running[name], ecr)]
        checks.append(Check(False, NOT_COMPARED))
    else:
        checks += _config_checks(Environment(cfg, clients), live, check_weights)
    firing = ", ".join(a.name for a in firing_alarms(clients.cloudwatch, live.name, outputs.rollback_alarm_names))
    checks.append(Check(not firing, f"in ALARM: {firing}" if firing else "no alarm in ALARM"))
    # A rollback alarm whose metric never arrives fails open (ops/operations/alarm_data.py).
    names = tuple(outputs.rollback_alarm_names)
    checks += [Check(*c) for c in alarm_data_checks(clients.cloudwatch, live.name, names, datetime.now(UTC))]
    topics = alarm_topics(clients.cloudformation, identity.name)
    return checks + subscription_checks(clients.client("sns"), topics, identity.name)


def _config_checks(env: Environment, live: LiveEndpoint, check_weights: bool) -> list[Check]:
    cfg, clients = env.cfg, env.clients
    wanted, running = {v.name: v for v in cfg.variants}, {v.name: v for v in live.variants}
    source_tag = None  # `image_tag: source` = the tag the image stack built
    if any(v.image_tag == naming.SOURCE_IMAGE_TAG for v in cfg.variants):
        image_outputs = read_image_outputs(clients.cloudformation, env.name)
        source_tag = image_outputs.source_image_tag if image_outputs else None
    checks = []
    for name in sorted(set(wanted) & set(running)):
        want, have = wanted[name], running[name]
        checks += _variant_checks(want, have, source_tag, clients.client("ecr"))
        if check_weights:
            expected = share_percent(want.initial_weight, (v.initial_weight for v in cfg.variants))
            checks.append(_share_check(env.name, live, name, expected))
    return checks


def alarm_topics(cloudformation: Any, env_name: str) -> dict[str, str]:
    """{"paging": arn, "ticket": arn} from the serving stack's outputs (the ones it has)."""
    _, outputs = stack_outputs(cloudformation, naming.serving_stack_name(env_name))
    return {label: outputs[key] for key, label in TOPIC_OUTPUTS.items() if key in outputs}


def subscription_checks(sns: Any, topics: dict[str, str], env_name: str) -> list[Check]:
    """A failed check per subscription awaiting confirmation; a passed one per topic with none."""
    checks = []
    for label, arn in topics.items():
        try:
            pages = sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=arn)
            subscriptions = [s for page in pages for s in page["Subscriptions"]]
        except ClientError as error:
            if error_code(error) != "NotFound":
                raise
            checks.append(Check(False, f"{label} topic {arn} does not exist: deploy {env_name} again"))
            continue
        pending = [s for s in subscriptions if s["SubscriptionArn"] == PENDING]
        checks += [Check(False, _unconfirmed(label, s)) for s in pending]
        if not pending:
            confirmed = len(subscriptions)
            checks.append(Check(True, f"{label} topic: {confirmed} subscription(s), none waiting for confirmation"))
    return checks


def _unconfirmed(label: str, subscription: dict) -> str:
    protocol, endpoint = subscription["Protocol"], subscription["Endpoint"]
    if protocol in ("email", "email-json"):
        how = "open the mail from AWS Notifications and confirm the subscription"
    else:  # an integration URL may hold a key: show only where it points
        endpoint = f"{urlsplit(endpoint).scheme}://{urlsplit(endpoint).hostname}/…"
        how = "the endpoint must answer SNS's SubscriptionConfirmation request (see its integration guide)"
    return (
        f"{label} topic: {protocol} {endpoint} has not confirmed its subscription and hears nothing: {how}; "
        f"if the link expired, `aws sns subscribe --topic-arn {subscription['TopicArn']} --protocol {protocol} "
        "--notification-endpoint ...` sends another"
    )


def _stack_checks(outputs: ServingOutputs, endpoint_name: str) -> list[Check]:
    return [
        Check(outputs.stack_status in HEALTHY_STACK_STATES, f"stack {outputs.stack_name} is {outputs.stack_status}"),
        Check(
            outputs.endpoint_name == endpoint_name,
            f"stack output EndpointName is {outputs.endpoint_name}, config says {endpoint_name}",
        ),
    ]


def _endpoint_checks(live: LiveEndpoint, outputs: ServingOutputs) -> list[Check]:
    """The endpoint is in service on the config the stack last deployed (else it was rolled back)."""
    same_config = live.config_name == outputs.endpoint_config_name
    return [
        Check(live.status == "InService", f"endpoint {live.name} is {live.status}"),
        Check(
            same_config,
            f"endpoint runs config {live.config_name}, stack expects {outputs.endpoint_config_name}"
            + ("" if same_config else " (rolled back, or deployed out of band?)"),
        ),
    ]


def _variant_checks(want: Variant, have: LiveVariant, source_tag: str | None, ecr: Any) -> list[Check]:
    """One variant against its config: instance types by priority (and how long SageMaker tries the pools),
    image (and that ECR still has it), settled weight."""
    name, live_types, config_types = have.name, have.instance_types or (have.instance_type,), tuple(want.instance_types)
    if len(live_types) == len(config_types) == 1:
        types = f"{name} instance type {live_types[0]}, config {config_types[0]}"
    else:
        types = f"{name} instance pools {', '.join(live_types)} (by priority), config {', '.join(config_types)}"
    checks = [Check(live_types == config_types, types)]
    wanted, live = want.instance_provision_timeout_seconds, have.provision_timeout_seconds
    if wanted is not None or live is not None:
        shown = ["not set" if value is None else f"{value} s" for value in (live, wanted)]
        checks.append(Check(live == wanted, f"{name} instance provisioning timeout {shown[0]}, config {shown[1]}"))
    checks.append(_image_tag_check(name, have.image, have.image_tag, want.image_tag, source_tag))
    return checks + _live_checks(have, ecr)


def _live_checks(have: LiveVariant, ecr: Any) -> list[Check]:
    """What needs no config: ECR still has the variant's image, and its weight is in effect."""
    name, in_ecr = have.name, image_in_ecr(ecr, have.image)
    missing = f"{name} image {have.image} is missing from ECR: new instances cannot start (scale-out, replacement); "
    weight = f"{name} weight {have.current_weight:g} in effect (desired {have.desired_weight:g})"
    return [
        Check(in_ecr, f"{name} image is in ECR" if in_ecr else missing + "deploy an image that exists"),
        Check(have.current_weight == have.desired_weight, weight),
    ]


def _share_check(env_name: str, live: LiveEndpoint, name: str, expected: float) -> Check:
    held = live.share(name) == expected
    return Check(
        held,
        f"{name} has {percent(live.share(name))} of traffic, config {percent(expected)}"
        + ("" if held else f" (after a ramp: `bin/ops shift {env_name} --to-config`)"),
    )


def _image_tag_check(name: str, image: str, live_tag: str, config_tag: str, source_tag: str | None) -> Check:
    if config_tag != naming.SOURCE_IMAGE_TAG:
        return Check(live_tag == config_tag, f"{name} image {image}, config tag {config_tag}")
    if source_tag is None:
        return Check(False, f"{name} config tag source, but the image stack has no {naming.OUTPUT_SOURCE_IMAGE_TAG}")
    return Check(live_tag == source_tag, f"{name} image {image}, config tag source (built: {source_tag})")


def report(checks: list[Check], console: Console) -> bool:
    for check in checks:
        (console.ok if check.passed else console.fail)(check.text)
    held = sum(c.passed for c in checks)
    console.line(f"\n{held} of {len(checks)} checks hold")
    return held == len(checks)
