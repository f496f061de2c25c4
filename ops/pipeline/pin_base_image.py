"""`make pin-base-image [TAG=v0.33.0]`: pin container/Dockerfile's vLLM base image by digest, with its tag.

A tag on Docker Hub can be pushed again; a digest cannot. The Dockerfile's runtime stage then reads
`FROM vllm/vllm-openai:v0.33.0@sha256:… AS runtime`: Docker pulls by the digest and the tag stays for
the reader (and for config/catalog.yaml's `serving_image.base_image`, which a test keeps equal to it).

How the digest is read, with no Docker engine (Docker Registry HTTP API V2, as Docker Hub serves it):
an anonymous pull token from auth.docker.io for `repository:vllm/vllm-openai:pull`, then
`HEAD /v2/vllm/vllm-openai/manifests/<tag>` accepting the OCI image index and Docker manifest list
media types; the `Docker-Content-Digest` header is the digest of what the tag names now (the
multi-platform index, which `docker pull` resolves to the build's platform as it does for the tag).

Bumping the release (another TAG) is two steps on purpose: the image's CUDA version decides which
host AMI can run it, so config/catalog.yaml's `serving_image` is updated by hand first (its comment
says how to read the CUDA version), then this pins the Dockerfile to the catalog's tag.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import httpx

from config import load_catalog

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "container" / "Dockerfile"
IMAGE = "vllm/vllm-openai"
REGISTRY = os.environ.get("PIN_REGISTRY_URL", "https://registry-1.docker.io")
AUTH = os.environ.get("PIN_AUTH_URL", "https://auth.docker.io/token")
ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
FROM_RUNTIME = re.compile(rf"^FROM {re.escape(IMAGE)}:(?P<tag>[\w.-]+)(?:@sha256:[0-9a-f]{{64}})? AS runtime$", re.M)
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class PinError(Exception):
    pass


def registry_digest(tag: str, client: httpx.Client) -> str:
    token = client.get(AUTH, params={"service": "registry.docker.io", "scope": f"repository:{IMAGE}:pull"})
    token.raise_for_status()
    answer = client.head(
        f"{REGISTRY}/v2/{IMAGE}/manifests/{tag}",
        headers={"Authorization": f"Bearer {token.json()['token']}", "Accept": ACCEPT},
    )
    if answer.status_code == 404:
        raise PinError(f"{IMAGE}:{tag} does not exist on the registry ({REGISTRY})")
    answer.raise_for_status()
    digest = answer.headers.get("Docker-Content-Digest", "")
    if not DIGEST.match(digest):
        raise PinError(f"the registry answered no usable Docker-Content-Digest for {IMAGE}:{tag}: {digest!r}")
    return digest


def pinned(dockerfile: str, tag: str, digest: str) -> str:
    if not FROM_RUNTIME.search(dockerfile):
        raise PinError(f"no line `FROM {IMAGE}:<tag>[@sha256:…] AS runtime` in {DOCKERFILE.relative_to(REPO)}")
    return FROM_RUNTIME.sub(f"FROM {IMAGE}:{tag}@{digest} AS runtime", dockerfile, count=1)


def pin(tag: str | None, dockerfile: Path = DOCKERFILE, client: httpx.Client | None = None) -> str:
    catalog_tag = load_catalog().serving_image.base_image.split(":", 1)[1]
    tag = tag or catalog_tag
    if tag != catalog_tag:
        raise PinError(
            f"config/catalog.yaml's serving_image.base_image is {IMAGE}:{catalog_tag}: update it (and its "
            f"cuda_version, read as its comment says) to {tag} first; the host AMI check depends on it"
        )
    with client or httpx.Client(timeout=30, follow_redirects=True) as http:
        digest = registry_digest(tag, http)
    dockerfile.write_text(pinned(dockerfile.read_text(), tag, digest))
    return digest


def main(argv: list[str]) -> int:
    tag = argv[0] if argv else None
    try:
        digest = pin(tag)
    except httpx.TransportError as error:
        print(
            f"error: cannot reach Docker Hub ({AUTH}, {REGISTRY}): {error}; run it where it is reachable",
            file=sys.stderr,
        )
        return 1
    except (PinError, httpx.HTTPError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"pinned container/Dockerfile to {IMAGE}:{tag or 'the catalog tag'}@{digest}; commit it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
