"""Custom resource: build the serving image with CodeBuild during `cdk deploy`, and wait for it.

CDK's Provider framework calls `on_event` once per CloudFormation event, then `is_complete` every poll
interval until it answers IsComplete or raises; a raised message becomes the stack event's reason,
which `cdk deploy` prints. Tags are immutable, so a tag already in ECR is never rebuilt. Only the
standard library and boto3, both part of the Lambda Python runtime.

Environment: BUILD_DEADLINE_SECONDS, after which a build still running is stopped and the deploy fails
(set below the Provider's total timeout, so the failure carries the build's logs rather than a bare
"timed out").
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import boto3

# botocore codebuild model, StatusType: SUCCEEDED | FAILED | FAULT | TIMED_OUT | IN_PROGRESS | STOPPED.
SUCCEEDED = "SUCCEEDED"
IN_PROGRESS = "IN_PROGRESS"
MESSAGE_LIMIT = 300  # per phase message; CloudFormation keeps the whole reason short


class ImageBuildFailed(Exception):
    """The deploy fails with this message: what went wrong and where the build's log is."""


def _clients() -> tuple[Any, Any]:
    return boto3.client("codebuild"), boto3.client("ecr")


def image_exists(ecr: Any, repository: str, tag: str) -> bool:
    try:
        ecr.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except ecr.exceptions.ImageNotFoundException:
        return False
    return True


def on_event(event: dict[str, Any], context: Any = None, clients: tuple[Any, Any] | None = None) -> dict[str, Any]:
    props = event["ResourceProperties"]
    repository, tag = props["RepositoryName"], props["ImageTag"]
    if event["RequestType"] == "Delete":
        # The image stays: endpoints may still pull it; the repository's lifecycle policy expires builds.
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    codebuild, ecr = clients or _clients()
    physical_id = f"{repository}:{tag}"
    if image_exists(ecr, repository, tag):
        return {"PhysicalResourceId": physical_id, "Data": {"ImageTag": tag, "BuildId": ""}}
    build = codebuild.start_build(
        projectName=props["ProjectName"],
        environmentVariablesOverride=[{"name": "IMAGE_TAG", "value": tag, "type": "PLAINTEXT"}],
        # A retried invocation of this handler must not start a second build for the same request.
        idempotencyToken=event["RequestId"],
    )["build"]
    return {"PhysicalResourceId": physical_id, "Data": {"ImageTag": tag, "BuildId": build["id"]}}


def is_complete(
    event: dict[str, Any],
    context: Any = None,
    clients: tuple[Any, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    build_id = (event.get("Data") or {}).get("BuildId")
    if event["RequestType"] == "Delete" or not build_id:
        return {"IsComplete": True}  # nothing was started: the image existed, or nothing to delete
    codebuild, ecr = clients or _clients()
    build = codebuild.batch_get_builds(ids=[build_id])["builds"][0]
    status = build["buildStatus"]
    if status == IN_PROGRESS:
        elapsed = ((now or datetime.now(UTC)) - build["startTime"]).total_seconds()
        deadline = int(os.environ["BUILD_DEADLINE_SECONDS"])
        if elapsed <= deadline:
            return {"IsComplete": False}
        codebuild.stop_build(id=build_id)
        raise ImageBuildFailed(
            f"image build {build_id} still running after {elapsed / 60:.0f} min (deadline {deadline // 60} min), "
            f"stopped; {_where(build)}"
        )
    if status != SUCCEEDED:
        raise ImageBuildFailed(f"image build {build_id} {status}{_failed_phase(build)}; {_where(build)}")
    props = event["ResourceProperties"]
    if not image_exists(ecr, props["RepositoryName"], props["ImageTag"]):
        raise ImageBuildFailed(
            f"image build {build_id} SUCCEEDED but {props['RepositoryName']}:{props['ImageTag']} is not in ECR; "
            f"{_where(build)}"
        )
    return {"IsComplete": True}


def _failed_phase(build: dict[str, Any]) -> str:
    for phase in build.get("phases", []):
        if phase.get("phaseStatus") not in (None, SUCCEEDED, IN_PROGRESS):
            messages = "; ".join(c["message"] for c in phase.get("contexts", []) if c.get("message"))
            detail = f": {messages[:MESSAGE_LIMIT]}" if messages else ""
            return f" in phase {phase['phaseType']} ({phase['phaseStatus']}{detail})"
    return ""


def _where(build: dict[str, Any]) -> str:
    logs = build.get("logs") or {}
    where = [f"build {build['arn']}"]
    if logs.get("deepLink"):
        where.append(f"logs {logs['deepLink']}")
    elif logs.get("groupName"):
        where.append(f"log group {logs['groupName']} stream {logs.get('streamName', '?')}")
    return ", ".join(where)
