"""`ops release-tag ENV TAG`: give a tested build's image a release tag, without rebuilding it.

ECR retags an image by writing its manifest again under the new tag (AWS, "Retagging an image":
BatchGetImage for the manifest, then PutImage with it and its media type). The repository's tags
are immutable, so a release tag is written once; the lifecycle policy never expires release tags
(`v*`, constructs/image_repository.py), so a rollback can always go back to one.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer
from botocore.exceptions import ClientError

from config import naming
from ops.environment import open_environment
from ops.errors import ExitCode, OpsError
from ops.output import Console

# A release tag as the lifecycle policy matches it (`v*`) and ECR accepts it (ImageTag, 1-300 chars).
RELEASE_TAG = re.compile(r"^v[A-Za-z0-9_.-]{1,127}$")


def read_image_outputs(cloudformation: Any, env_name: str) -> tuple[str, str | None]:
    """(repository name, the tag the last deploy built from container/) from the image stack's outputs."""
    stack_name = naming.image_stack_name(env_name)
    try:
        stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    except ClientError as error:
        if "does not exist" in error.response.get("Error", {}).get("Message", ""):
            raise OpsError(
                f"stack {stack_name} does not exist in {cloudformation.meta.region_name}: deploy it with "
                f"`make deploy-image ENV={env_name}` (or check --region / AWS_PROFILE)",
                ExitCode.NOT_FOUND,
            ) from None
        raise
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    repository = outputs.get(naming.OUTPUT_REPOSITORY_NAME)
    if not repository:
        raise OpsError(f"stack {stack_name} has no {naming.OUTPUT_REPOSITORY_NAME} output", ExitCode.NOT_FOUND)
    return repository, outputs.get(naming.OUTPUT_SOURCE_IMAGE_TAG)


def tag_release(ecr: Any, cloudformation: Any, env_name: str, tag: str, source: str | None, console: Console) -> None:
    if not RELEASE_TAG.match(tag):
        raise OpsError(
            f"release tag {tag!r} must start with 'v' and use letters, digits, '.', '_' or '-' (e.g. v0.2.0): "
            f"only `{naming.RELEASE_TAG_PATTERN}` tags are kept forever by the repository's lifecycle policy",
            ExitCode.USAGE,
        )
    repository, built = read_image_outputs(cloudformation, env_name)
    source = source or built
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
    console.line(
        f"next: set the canary's image_tag to {tag} in config/environments/{env_name}.yaml, commit, and "
        f"`make deploy ENV={env_name}`; `bin/ops promote {env_name}` later copies it to the primary"
    )


def _image(ecr: Any, repository: str, tag: str) -> dict | None:
    """The image `repository:tag` with its manifest, or None when ECR has no such tag."""
    answer = ecr.batch_get_image(repositoryName=repository, imageIds=[{"imageTag": tag}])
    return answer["images"][0] if answer.get("images") else None


def release_tag_command(
    ctx: typer.Context,
    env: Annotated[str, typer.Argument(help="Environment whose image repository holds the build.")],
    tag: Annotated[str, typer.Argument(help="The release tag to give it, e.g. v0.2.0 (release tags never expire).")],
    source: Annotated[
        str | None, typer.Option(help="The tag of the build to release. Default: the image stack's SourceImageTag.")
    ] = None,
    region: Annotated[str | None, typer.Option(help="AWS region, for environments whose config has none.")] = None,
) -> None:
    """Give a tested build's image a release tag in ECR, without rebuilding (`v…`, kept forever). Exit 4
    when the tag already names another image; 6 when the stack or the build is not there."""
    opener = ctx.obj.open if ctx.obj is not None else lambda env, region: open_environment(env, region, {})
    environment = opener(env, region)
    clients = environment.clients
    tag_release(clients.client("ecr"), clients.cloudformation, env, tag, source, Console(getattr(ctx.obj, "zone", None)))
