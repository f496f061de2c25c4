"""`bin/ops preflight`'s base image (issue 50 §7): a Docker Hub tag can move, so production needs a digest.

Read from container/Dockerfile (`make pin-base-image` pins it); other environments get a warning.
"""

from __future__ import annotations

import re
from pathlib import Path

from config import EnvironmentConfig
from ops.operations.preflight_finding import Finding

DOCKERFILE = Path(__file__).resolve().parents[2] / "container" / "Dockerfile"
FROM = re.compile(r"^FROM\s+(?P<image>\S+)(?:\s+AS\s+\S+)?\s*$", re.M | re.I)
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def base_image_findings(cfg: EnvironmentConfig, dockerfile: Path = DOCKERFILE) -> list[Finding]:
    text = dockerfile.read_text()
    stages = {m.group(0).split()[-1] for m in FROM.finditer(text) if " AS " in m.group(0).upper()}
    findings = []
    for match in FROM.finditer(text):
        image = match.group("image")
        if image in stages or DIGEST.search(image):  # a stage of this Dockerfile, or pinned
            continue
        findings.append(
            Finding(
                f"base image of container/Dockerfile ({cfg.name} is {'production' if cfg.production else 'not production'})",
                f"{image}, a tag the registry can move",
                "a digest (@sha256:…), so that every build of a release is the same image",
                "make pin-base-image",
                blocking=cfg.production,
            )
        )
    return findings
