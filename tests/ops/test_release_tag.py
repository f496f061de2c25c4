"""`bin/ops release-tag`: a build's image gets a release tag in ECR (moto), written once, never rebuilt."""

from __future__ import annotations

from tests.ops_world import REPOSITORY


def digest(world, tag: str) -> str | None:
    images = world.client("ecr").batch_get_image(repositoryName=REPOSITORY, imageIds=[{"imageTag": tag}])["images"]
    return images[0]["imageId"]["imageDigest"] if images else None


def test_the_stacks_source_build_gets_the_release_tag(prod, cli) -> None:
    prod.push_image("src-1234abcd")
    prod.image_stack("src-1234abcd")

    result = cli("release-tag", "prod", "v0.3.0")

    assert result.exit_code == 0, result.output
    assert digest(prod, "v0.3.0") == digest(prod, "src-1234abcd") is not None
    assert f"tagged {REPOSITORY}:src-1234abcd as v0.3.0" in result.output
    assert "next: set the canary's image_tag to v0.3.0 in config/environments/prod.yaml" in result.output

    again = cli("release-tag", "prod", "v0.3.0")
    assert again.exit_code == 0 and "already is src-1234abcd" in again.output


def test_a_named_build_and_a_taken_tag(prod, cli) -> None:
    prod.push_image("src-aaaa")
    prod.push_image("src-bbbb")
    prod.image_stack("src-bbbb")
    assert cli("release-tag", "prod", "v1.0.0", "--source", "src-aaaa").exit_code == 0
    assert digest(prod, "v1.0.0") == digest(prod, "src-aaaa") != digest(prod, "src-bbbb")

    taken = cli("release-tag", "prod", "v1.0.0")
    assert taken.exit_code == 4
    assert f"{REPOSITORY}:v1.0.0 already names another image" in taken.stderr
    assert digest(prod, "v1.0.0") == digest(prod, "src-aaaa")  # unchanged


def test_refusals_before_and_after_aws(prod, cli) -> None:
    bad = cli("release-tag", "prod", "latest")
    assert bad.exit_code == 2 and "must start with 'v'" in bad.stderr

    no_stack = cli("release-tag", "prod", "v0.3.0")
    assert no_stack.exit_code == 6
    assert "stack MangaAssist-prod-Image does not exist" in no_stack.stderr
    assert "make deploy-image ENV=prod" in no_stack.stderr

    prod.image_stack("src-gone")
    expired = cli("release-tag", "prod", "v0.3.0")
    assert expired.exit_code == 6 and f"no image {REPOSITORY}:src-gone in ECR" in expired.stderr
    assert "Traceback" not in expired.output
