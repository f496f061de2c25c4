"""The image repository and its build project (prod)."""

from __future__ import annotations

from aws_cdk.assertions import Match


def test_repository_scans_on_push_with_immutable_tags(prod) -> None:
    prod.image.has_resource_properties(
        "AWS::ECR::Repository",
        {
            "ImageScanningConfiguration": {"ScanOnPush": True},
            "ImageTagMutability": "IMMUTABLE",
            "LifecyclePolicy": {"LifecyclePolicyText": Match.string_like_regexp('"countNumber":30')},
        },
    )
    prod.image.has_resource("AWS::ECR::Repository", {"DeletionPolicy": "Retain"})


def test_build_project_builds_container_dir_without_synth_needing_docker(prod) -> None:
    prod.image.has_resource_properties(
        "AWS::CodeBuild::Project",
        {
            "Source": Match.object_like({"Type": "S3"}),
            "Environment": Match.object_like(
                {
                    "PrivilegedMode": True,
                    "EnvironmentVariables": Match.array_with(
                        [
                            Match.object_like(
                                {"Name": "IMAGE_TAG", "Value": Match.string_like_regexp("^src-[0-9a-f]{12}$")}
                            )
                        ]
                    ),
                }
            ),
            "EncryptionKey": Match.any_value(),
        },
    )


def test_repository_uri_is_an_output(prod) -> None:
    assert "RepositoryUri" in prod.image.find_outputs("*")
