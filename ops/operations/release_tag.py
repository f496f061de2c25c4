"""`ops release-tag ENV TAG`: a tested build's image tagged for release, without rebuilding.

ECR retags by putting the manifest again under the new tag (AWS, "Retagging an image"). Tags are immutable and
the lifecycle policy keeps `v*` forever (constructs/image_repository.py).
"""

from __future__ import annotations

import re
from typing import Any

from config import environment_label, naming
from ops.operations.errors import ExitCode, OpsError
from ops.operations.output import Console
from ops.operations.runtime_hook import runtime_hook
from ops.operations.stack import read_image_outputs

# A release tag as the lifecycle policy matches it (`v*`) and ECR accepts it (ImageTag, 1-300 chars).
RELEASE_TAG = re.compile(r"^v[A-Za-z0-9_.-]{1,127}$")


def tag_release(ecr: Any, cloudformation: Any, env_name: str, tag: str, source: str | None, console: Console) -> None:
    if not RELEASE_TAG.match(tag):
        raise OpsError(
            f"release tag {tag!r} must start with 'v' and use letters, digits, '.', '_' or '-' (e.g. v0.2.0): "
            f"only `{naming.RELEASE_TAG_PATTERN}` tags are kept forever by the repository's lifecycle policy",
            ExitCode.USAGE,
        )
    outputs = read_image_outputs(cloudformation, env_name)
    stack_name = naming.image_stack_name(env_name)
    if outputs is None:
        first = runtime_hook().image_stack_missing(env_name)
        raise OpsError(
            f"stack {stack_name} does not exist in {cloudformation.meta.region_name}: {first}", ExitCode.NOT_FOUND
        )
    repository = outputs.repository_name
    if not repository:
        raise OpsError(f"stack {stack_name} has no {naming.OUTPUT_REPOSITORY_NAME} output", ExitCode.NOT_FOUND)
    source = source or outputs.source_image_tag
    if not source:
        raise OpsError(
            f"the image stack of {env_name} has built no image yet ({naming.OUTPUT_SOURCE_IMAGE_TAG} output is "
            "empty): deploy it, or name the image with --source",
            ExitCode.NOT_FOUND,
        )
    image = _image(ecr, repository, source)
    if image is None:
        raise OpsError(f"no image {repository}:{source} in ECR (expired, or never built)", ExitCode.NOT_FOUND)
    digest = image["imageId"]["imageDigest"]
    existing = _image(ecr, repository, tag)
    if existing is not None:
        if existing["imageId"]["imageDigest"] == digest:
            console.ok(f"{repository}:{tag} already is {source} ({digest}); nothing to do")
            return
        raise OpsError(
            f"{repository}:{tag} already names another image ({existing['imageId']['imageDigest']}): the "
            f"repository's tags are immutable and a release tag is written once; choose a new one",
            ExitCode.REFUSED,
        )
    manifest = {"imageManifest": image["imageManifest"]}
    if image.get("imageManifestMediaType"):
        manifest["imageManifestMediaType"] = image["imageManifestMediaType"]
    ecr.put_image(repositoryName=repository, imageTag=tag, **manifest)
    console.ok(f"tagged {repository}:{source} as {tag} ({digest})")
    deploy = runtime_hook().deploy_command(env_name)
    console.line(
        f"next: set the canary's image_tag to {tag} in {environment_label(env_name)}, commit, and "
        f"`{deploy}`; `bin/ops promote {env_name}` later copies it to the primary"
    )


def _image(ecr: Any, repository: str, tag: str) -> dict | None:
    """The image `repository:tag` with its manifest, or None when ECR has no such tag."""
    answer = ecr.batch_get_image(repositoryName=repository, imageIds=[{"imageTag": tag}])
    return answer["images"][0] if answer.get("images") else None
