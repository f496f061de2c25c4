"""`make pin-base-image` against a local registry speaking Docker's Registry HTTP API V2."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ops.pipeline import pin_base_image
from ops.pipeline.pin_base_image import DOCKERFILE, PinError, pin

INDEX = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []})
DIGEST = "sha256:" + hashlib.sha256(INDEX.encode()).hexdigest()


class Registry(BaseHTTPRequestHandler):
    """Docker Hub's two endpoints as the tool uses them: a pull token, then a manifest HEAD that needs it."""

    seen: list[dict] = []

    def do_GET(self) -> None:  # the token service
        body = json.dumps({"token": "t0ken"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:  # /v2/<name>/manifests/<tag>
        self.seen.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "accept": self.headers.get("Accept")}
        )
        if self.headers.get("Authorization") != "Bearer t0ken":
            self.send_response(401)
        elif self.path != "/v2/vllm/vllm-openai/manifests/v0.33.0":
            self.send_response(404)
        else:
            self.send_response(200)
            self.send_header("Docker-Content-Digest", DIGEST)
            self.send_header("Content-Type", "application/vnd.oci.image.index.v1+json")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def registry(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(pin_base_image, "REGISTRY", url)
    monkeypatch.setattr(pin_base_image, "AUTH", f"{url}/token")
    Registry.seen = []
    yield Registry
    server.shutdown()


def test_the_digest_goes_beside_the_tag(registry, tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(DOCKERFILE.read_text())
    assert pin(None, dockerfile) == DIGEST
    text = dockerfile.read_text()
    assert f"FROM vllm/vllm-openai:v0.33.0@{DIGEST} AS runtime" in text.splitlines()
    assert "application/vnd.oci.image.index.v1+json" in registry.seen[0]["accept"]
    # Pinning again replaces the digest, never appends a second one.
    assert pin("v0.33.0", dockerfile) == DIGEST and dockerfile.read_text() == text


def test_another_release_needs_the_catalog_first(registry, tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(DOCKERFILE.read_text())
    with pytest.raises(PinError, match="update it .*cuda_version.* to v0.34.0 first"):
        pin("v0.34.0", dockerfile)
    assert dockerfile.read_text() == DOCKERFILE.read_text() and registry.seen == []
