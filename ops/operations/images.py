"""Is an image still in ECR? SageMaker pulls it for every instance it adds, so an expired image breaks the next scale-out."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ops.operations.errors import error_code

MISSING = ("ImageNotFoundException", "RepositoryNotFoundException")


def image_in_ecr(ecr: Any, image_uri: str) -> bool:
    """`ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG` or `…/REPO@sha256:…` exists in that registry."""
    registry, _, reference = image_uri.partition("/")
    repository, _, tag_or_digest = reference.partition("@") if "@" in reference else reference.rpartition(":")
    return image_in_repository(ecr, repository, tag_or_digest, registryId=registry.split(".", 1)[0])


def image_in_repository(ecr: Any, repository: str, tag_or_digest: str, **registry: str) -> bool:
    """A tag or a `sha256:` digest exists in the repository (`registryId=`: another account's registry)."""
    key = "imageDigest" if tag_or_digest.startswith("sha256:") else "imageTag"
    try:
        ecr.describe_images(repositoryName=repository, imageIds=[{key: tag_or_digest}], **registry)
    except ClientError as error:
        if error_code(error) in MISSING:
            return False
        raise
    return True
