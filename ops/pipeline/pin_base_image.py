"""`make pin-base-image [TAG=v0.33.0]`: pin container/Dockerfile's vLLM base image by digest, with its tag.

A Docker Hub tag can be pushed again; a digest cannot. The digest is read without Docker (Registry HTTP API V2):
an anonymous pull token from auth.docker.io, then `HEAD /v2/vllm/vllm-openai/manifests/<tag>` accepting the
index and manifest-list media types; `Docker-Content-Digest` names what the tag points to. Another TAG needs
config/catalog.yaml's `serving_image` updated by hand first: the image's CUDA version decides the host AMI.
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
