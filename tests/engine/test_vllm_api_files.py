"""The engine virtualenv's vLLM API-server files are byte-identical to vLLM 0.33.0's (the image's base),
so what this tier shows about them holds for production. The hashes are recorded in
vllm-0.33.0-api-files.sha256 with what each file is relied on for."""

import hashlib
from pathlib import Path

RECORDED = Path(__file__).with_name("vllm-0.33.0-api-files.sha256")


def recorded_files() -> list[tuple[str, str, str]]:
    entries = []
    for line in RECORDED.read_text().splitlines():
        if line and not line.startswith("#"):
            digest, path, reason = line.split("  ", 2)
            entries.append((digest, path, reason))
    return entries


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_the_files_we_rely_on_are_byte_identical_to_vllm_0_33_0(venv):
    root = site_packages(venv)
    entries = recorded_files()
    assert len(entries) >= 8
    differing = [f"{path}: re-verify {reason}" for digest, path, reason in entries if sha256(root / path) != digest]
    assert not differing, "differs from the recorded 0.33.0 file:\n  " + "\n  ".join(differing)
