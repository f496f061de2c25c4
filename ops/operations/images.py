"""Is an image still in ECR? SageMaker pulls it for every instance it adds, so an expired image breaks the next scale-out."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

MISSING = ("ImageNotFoundException", "RepositoryNotFoundException")


def image_in_ecr(ecr: Any, image_uri: str) -> bool:
    """`ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG` or `…/REPO@sha256:…` exists in that registry."""
    registry, _, reference = image_uri.partition("/")
    if "@" in reference:
        repository, digest = reference.split("@", 1)
        image_id = {"imageDigest": digest}
    else:
        repository, tag = reference.rsplit(":", 1)
        image_id = {"imageTag": tag}
    try:
        ecr.describe_images(registryId=registry.split(".", 1)[0], repositoryName=repository, imageIds=[image_id])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in MISSING:
            return False
        raise
    return True
