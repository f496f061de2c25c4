"""ServingModels on its own: a bare stack, one image repository, two models. The real environments' models
are tested in tests/stacks/test_serving_stack.py."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Match, Template

from constructs.encryption_key import service_key
from constructs.image_repository import ImageRepository
from constructs.serving_model import ModelProps, ServingModels, ServingModelsProps
from tests.shared_synthesis import CDK_CONTEXT

DIGEST = "sha256:" + "a" * 64


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    source = tmp_path_factory.mktemp("container")
    Path(source, "Dockerfile").write_text("FROM scratch\n")
    stack = cdk.Stack(cdk.App(context=CDK_CONTEXT), "Models")
    key = service_key(stack, "Key", description="test")
    image = ImageRepository(stack, "Image", source_dir=source, keep_images=2, encryption_key=key)
    models = (
        ModelProps("primary", "v1", "s3://weights/llama/", {"VARIANT": "primary"}),
        ModelProps("canary", DIGEST, "s3://weights/llama-next/", {"VARIANT": "canary"}),
    )
    ServingModels(
        stack,
        "Models",
        ServingModelsProps(
            endpoint_name="chat",
            image=image,
            encryption_key=key,
            models=models,
            log_retention=logs.RetentionDays.ONE_WEEK,
        ),
    )
    return Template.from_stack(stack)


def test_one_isolated_model_per_variant_with_its_image_model_data_and_environment(template) -> None:
    for variant, separator, tag, uri in (
        ("primary", ":", "v1", "s3://weights/llama/"),
        ("canary", "@", DIGEST, "s3://weights/llama-next/"),
    ):
        template.has_resource_properties(
            "AWS::SageMaker::Model",
            {
                "EnableNetworkIsolation": True,
                "PrimaryContainer": {
                    "Image": {"Fn::Join": ["", Match.array_with([f"{separator}{tag}"])]},
                    "Environment": {"VARIANT": variant},
                    "ModelDataSource": {
                        "S3DataSource": {"S3Uri": uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
                    },
                },
            },
        )


def test_the_log_group_is_the_one_sagemaker_writes_to_kept_as_long_as_asked(template) -> None:
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": "/aws/sagemaker/Endpoints/chat", "RetentionInDays": 7}
    )


def test_the_role_reads_each_model_data_prefix_and_lists_only_under_it(template) -> None:
    def arn(path: str) -> dict:
        return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":s3:::{path}"]]}

    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": "s3:GetObject",
                                "Resource": [arn("weights/llama-next/*"), arn("weights/llama/*")],
                            }
                        ),
                        *(
                            Match.object_like(
                                {
                                    "Action": "s3:ListBucket",
                                    "Resource": arn("weights"),
                                    "Condition": {"StringLike": {"s3:prefix": [prefix]}},
                                }
                            )
                            for prefix in ("llama-next/*", "llama/*")
                        ),
                    ]
                )
            }
        },
    )
