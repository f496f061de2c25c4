"""The serving stack's CloudFormation outputs: what the last successful deploy says should be live."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from config import naming
from ops.operations.errors import missing_is_not_found, says_missing


@dataclass(frozen=True)
class ServingOutputs:
    stack_name: str
    stack_status: str
    endpoint_name: str | None
    endpoint_config_name: str | None
    rollback_alarm_names: tuple[str, ...]


def stack_outputs(cloudformation: Any, stack_name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The stack and its outputs by key; ClientError when it does not exist."""
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    return stack, {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def read_serving_outputs(cloudformation: Any, env_name: str) -> ServingOutputs:
    stack_name = naming.serving_stack_name(env_name)
    with missing_is_not_found(
        "does not exist",
        f"stack {stack_name} does not exist in {cloudformation.meta.region_name}: "
        f"deploy with `make deploy ENV={env_name}` (or check --region / AWS_PROFILE)",
    ):
        stack, outputs = stack_outputs(cloudformation, stack_name)
    return ServingOutputs(
        stack_name=stack_name,
        stack_status=stack["StackStatus"],
        endpoint_name=outputs.get(naming.OUTPUT_ENDPOINT_NAME),
        endpoint_config_name=outputs.get(naming.OUTPUT_ENDPOINT_CONFIG_NAME),
        rollback_alarm_names=_names(outputs.get(naming.OUTPUT_ROLLBACK_ALARMS)),
    )


def _names(joined: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in joined.split(",") if n.strip()) if joined else ()


@dataclass(frozen=True)
class ImageOutputs:
    repository_name: str | None
    source_image_tag: str | None  # the tag the last deploy built from container/ (what `image_tag: source` means)


def read_image_outputs(cloudformation: Any, env_name: str) -> ImageOutputs | None:
    """The image stack's outputs, or None when the stack is not deployed."""
    try:
        _, outputs = stack_outputs(cloudformation, naming.image_stack_name(env_name))
    except ClientError as error:
        if says_missing(error, "does not exist"):
            return None
        raise
    return ImageOutputs(outputs.get(naming.OUTPUT_REPOSITORY_NAME), outputs.get(naming.OUTPUT_SOURCE_IMAGE_TAG))
