"""`verify`: after a deploy, does the live endpoint match what the stack and the config say?

Running the endpoint config the stack expects catches a silent rollback: SageMaker's blue/green
auto-rollback returns the endpoint to the old config while the operator may only have seen the
deploy command finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config import naming
from config.schema import Variant
from config.variant_lookup import share_percent
from ops.alarms import firing_alarms
from ops.endpoint import LiveEndpoint, LiveVariant, read_endpoint
from ops.environment import Environment
from ops.images import image_in_ecr
from ops.output import Console, percent
from ops.stack import ServingOutputs, read_serving_outputs, read_source_image_tag

HEALTHY_STACK_STATES = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"}


@dataclass(frozen=True)
class Check:
    passed: bool
    text: str


def verify(env: Environment, check_weights: bool) -> list[Check]:
    cfg, clients = env.cfg, env.clients
    outputs = read_serving_outputs(clients.cloudformation, env.name)
    live = read_endpoint(clients.sagemaker, cfg.endpoint_name, env.name)
    checks = [*_stack_checks(outputs, cfg.endpoint_name), *_endpoint_checks(live, outputs)]
    wanted = {v.name: v for v in cfg.variants}
    running = {v.name: v for v in live.variants}
    checks.append(
        Check(
            set(wanted) == set(running),
            f"variants live: {', '.join(sorted(running))}; config: {', '.join(sorted(wanted))}",
        )
    )
    source_tag = None  # `image_tag: source` = the tag the image stack built
    if any(v.image_tag == naming.SOURCE_IMAGE_TAG for v in cfg.variants):
        source_tag = read_source_image_tag(clients.cloudformation, env.name)
    for name in sorted(set(wanted) & set(running)):
        want, have = wanted[name], running[name]
        checks += _variant_checks(want, have, source_tag, clients.client("ecr"))
        if check_weights:
            expected = share_percent(want.initial_weight, (v.initial_weight for v in cfg.variants))
            checks.append(_share_check(env.name, live, name, expected))
    alarms = firing_alarms(clients.cloudwatch, live.name, outputs.rollback_alarm_names)
    checks.append(
        Check(not alarms, "no alarm in ALARM" if not alarms else f"in ALARM: {', '.join(a.name for a in alarms)}")
    )
    return checks


def _stack_checks(outputs: ServingOutputs, endpoint_name: str) -> list[Check]:
    """The serving stack settled, and it deployed the endpoint the config names."""
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
    """One variant live against its config: instance type, image (and that ECR still has it), settled weight."""
    name = have.name
    in_ecr = image_in_ecr(ecr, have.image)
    return [
        Check(
            have.instance_type == want.instance_type,
            f"{name} instance type {have.instance_type}, config {want.instance_type}",
        ),
        _image_tag_check(name, have.image, have.image_tag, want.image_tag, source_tag),
        Check(
            in_ecr,
            f"{name} image is in ECR"
            if in_ecr
            else f"{name} image {have.image} is missing from ECR: new instances cannot start (scale-out, "
            "replacement); deploy an image that exists",
        ),
        Check(
            have.current_weight == have.desired_weight,
            f"{name} weight {have.current_weight:g} in effect (desired {have.desired_weight:g})",
        ),
    ]


def _share_check(env_name: str, live: LiveEndpoint, name: str, expected: float) -> Check:
    """The variant serves the share of traffic the config gives it (a shift may have left it elsewhere)."""
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
