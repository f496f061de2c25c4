"""The deploy-time image build's custom-resource handler, against botocore's Stubber: every call is
checked against the real CodeBuild and ECR service models, and a call the test did not expect fails."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from constructs.image_build_handler import handler

PROJECT = "ImageBuild4E5F6-abc"
REPOSITORY = "mangaassist-llm"
TAG = "src-0123456789ab"
BUILD_ID = f"{PROJECT}:6f1c1c2e-1111-2222-3333-444455556666"
BUILD_ARN = f"arn:aws:codebuild:ap-northeast-1:111111111111:build/{BUILD_ID}"
DEEP_LINK = "https://console.aws.amazon.com/cloudwatch/home?region=ap-northeast-1#logEvent:group=build-logs;stream=6f1c"
NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
PROPS = {"ServiceToken": "arn:aws:lambda:x", "ProjectName": PROJECT, "RepositoryName": REPOSITORY, "ImageTag": TAG}


class Aws:
    def __init__(self) -> None:
        self.codebuild = boto3.client("codebuild", region_name="ap-northeast-1")
        self.ecr = boto3.client("ecr", region_name="ap-northeast-1")
        self.codebuild_stub, self.ecr_stub = Stubber(self.codebuild), Stubber(self.ecr)

    @property
    def clients(self) -> tuple:
        return self.codebuild, self.ecr

    def image(self, present: bool) -> None:
        params = {"repositoryName": REPOSITORY, "imageIds": [{"imageTag": TAG}]}
        if present:
            detail = {"repositoryName": REPOSITORY, "imageDigest": "sha256:" + "a" * 64, "imageTags": [TAG]}
            self.ecr_stub.add_response("describe_images", {"imageDetails": [detail]}, params)
        else:
            self.ecr_stub.add_client_error(
                "describe_images",
                service_error_code="ImageNotFoundException",
                http_status_code=400,
                expected_params=params,
            )

    def build(self, status: str, started: datetime = NOW, **extra) -> None:
        build = {
            "id": BUILD_ID,
            "arn": BUILD_ARN,
            "buildStatus": status,
            "startTime": started,
            "logs": {"groupName": "build-logs", "streamName": "6f1c", "deepLink": DEEP_LINK},
            **extra,
        }
        self.codebuild_stub.add_response("batch_get_builds", {"builds": [build]}, {"ids": [BUILD_ID]})


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    monkeypatch.setenv("BUILD_DEADLINE_SECONDS", str(50 * 60))
    world = Aws()
    with world.codebuild_stub, world.ecr_stub:
        yield world
        world.codebuild_stub.assert_no_pending_responses()
        world.ecr_stub.assert_no_pending_responses()


def create_event() -> dict:
    return {"RequestType": "Create", "RequestId": "req-1", "ResourceProperties": PROPS}


def poll_event(build_id: str = BUILD_ID, request: str = "Create") -> dict:
    """What the Provider framework hands is_complete: the request merged with on_event's answer."""
    return {
        **create_event(),
        "RequestType": request,
        "PhysicalResourceId": f"{REPOSITORY}:{TAG}",
        "Data": {"ImageTag": TAG, "BuildId": build_id},
    }


def test_a_missing_image_starts_one_build_of_that_tag(aws: Aws) -> None:
    aws.image(present=False)
    aws.codebuild_stub.add_response(
        "start_build",
        {"build": {"id": BUILD_ID, "buildStatus": "IN_PROGRESS"}},
        {
            "projectName": PROJECT,
            "environmentVariablesOverride": [{"name": "IMAGE_TAG", "value": TAG, "type": "PLAINTEXT"}],
            "idempotencyToken": "req-1",
        },
    )

    result = handler.on_event(create_event(), clients=aws.clients)

    assert result == {"PhysicalResourceId": f"{REPOSITORY}:{TAG}", "Data": {"ImageTag": TAG, "BuildId": BUILD_ID}}


def test_an_image_already_in_ecr_is_not_rebuilt(aws: Aws) -> None:
    aws.image(present=True)  # and no start_build: the Stubber fails on any call not queued

    started = handler.on_event(create_event(), clients=aws.clients)
    done = handler.is_complete({**create_event(), **started}, clients=aws.clients)

    assert started["Data"]["BuildId"] == ""
    assert done == {"IsComplete": True}


def test_a_running_build_is_polled_again(aws: Aws) -> None:
    aws.build("IN_PROGRESS", started=NOW - timedelta(minutes=12))

    assert handler.is_complete(poll_event(), clients=aws.clients, now=NOW) == {"IsComplete": False}


def test_a_successful_build_completes_once_the_tag_is_in_ecr(aws: Aws) -> None:
    aws.build("SUCCEEDED")
    aws.image(present=True)

    assert handler.is_complete(poll_event(), clients=aws.clients, now=NOW) == {"IsComplete": True}


def test_a_successful_build_without_the_tag_fails(aws: Aws) -> None:
    aws.build("SUCCEEDED")
    aws.image(present=False)

    with pytest.raises(handler.ImageBuildFailed, match=f"SUCCEEDED but {REPOSITORY}:{TAG} is not in ECR"):
        handler.is_complete(poll_event(), clients=aws.clients, now=NOW)


def test_a_failed_build_fails_the_deploy_with_the_failed_phase_and_the_log_location(aws: Aws) -> None:
    phases = [
        {"phaseType": "PRE_BUILD", "phaseStatus": "SUCCEEDED"},
        {
            "phaseType": "BUILD",
            "phaseStatus": "FAILED",
            "contexts": [
                {
                    "statusCode": "COMMAND_EXECUTION_ERROR",
                    "message": "Error while executing command: docker build. Reason: exit status 1",
                }
            ],
        },
    ]
    aws.build("FAILED", phases=phases)

    with pytest.raises(handler.ImageBuildFailed) as failure:
        handler.is_complete(poll_event(), clients=aws.clients, now=NOW)

    message = str(failure.value)
    assert message.startswith(
        f"image build {BUILD_ID} FAILED in phase BUILD (FAILED: Error while executing command: docker build"
    )
    assert f"build {BUILD_ARN}" in message
    assert f"logs {DEEP_LINK}" in message


def test_a_build_codebuild_timed_out_fails_with_its_logs(aws: Aws) -> None:
    aws.build("TIMED_OUT", phases=[{"phaseType": "BUILD", "phaseStatus": "TIMED_OUT"}])

    with pytest.raises(handler.ImageBuildFailed, match=f"TIMED_OUT in phase BUILD .*logs {re.escape(DEEP_LINK)}$"):
        handler.is_complete(poll_event(), clients=aws.clients, now=NOW)


def test_a_build_past_the_deadline_is_stopped_and_fails_with_its_logs(aws: Aws) -> None:
    aws.build("IN_PROGRESS", started=NOW - timedelta(minutes=51))
    aws.codebuild_stub.add_response("stop_build", {"build": {"id": BUILD_ID}}, {"id": BUILD_ID})

    with pytest.raises(handler.ImageBuildFailed) as failure:
        handler.is_complete(poll_event(), clients=aws.clients, now=NOW)

    assert "still running after 51 min (deadline 50 min), stopped" in str(failure.value)
    assert f"logs {DEEP_LINK}" in str(failure.value)


def test_without_a_deep_link_the_log_group_and_stream_are_named(aws: Aws) -> None:
    aws.build("FAULT", logs={"groupName": "build-logs", "streamName": "6f1c"})

    with pytest.raises(handler.ImageBuildFailed, match="FAULT; build .*, log group build-logs stream 6f1c$"):
        handler.is_complete(poll_event(), clients=aws.clients, now=NOW)


def test_delete_keeps_the_image_and_calls_nothing(aws: Aws) -> None:
    event = {**poll_event(request="Delete")}

    assert handler.on_event(event, clients=aws.clients) == {"PhysicalResourceId": f"{REPOSITORY}:{TAG}"}
    assert handler.is_complete(event, clients=aws.clients) == {"IsComplete": True}
