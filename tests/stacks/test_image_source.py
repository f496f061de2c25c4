"""The image source asset is the Docker build context: caches and local weights do not change its tag."""

from __future__ import annotations

import shutil
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_kms as kms

from constructs.image_repository import ImageRepository

ROOT = Path(__file__).resolve().parents[2]


def _default_tag(source_dir: Path) -> str:
    stack = cdk.Stack(cdk.App())
    key = kms.Key(stack, "Key")
    return ImageRepository(stack, "Image", source_dir=source_dir, keep_images=5, encryption_key=key).default_tag


def test_tag_ignores_caches_and_local_weights_but_follows_the_code(tmp_path: Path) -> None:
    source = tmp_path / "container"
    shutil.copytree(ROOT / "container", source, ignore=shutil.ignore_patterns("__pycache__", "model"))
    clean = _default_tag(source)

    (source / "serving" / "__pycache__").mkdir()
    (source / "serving" / "__pycache__" / "contract.cpython-311.pyc").write_bytes(b"\0cache")
    (source / "model" / "base").mkdir(parents=True)
    (source / "model" / "base" / "weights.safetensors").write_bytes(b"\0weights")
    (source / "notes.txt").write_text("not copied by the Dockerfile")
    assert _default_tag(source) == clean

    (source / "serving" / "contract.py").write_text((source / "serving" / "contract.py").read_text() + "\n# changed\n")
    assert _default_tag(source) != clean


def test_asset_holds_what_codebuild_needs_to_build(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path / "out"))
    stack = cdk.Stack(app, "ImageOnly")
    ImageRepository(stack, "Image", source_dir=ROOT / "container", keep_images=5, encryption_key=kms.Key(stack, "Key"))
    app.synth()
    (staged,) = [p for p in (tmp_path / "out").iterdir() if p.name.startswith("asset.")]
    files = {str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()}
    assert "Dockerfile" in files
    assert "serving/supervisor.py" in files and "serving/contract.py" in files
    assert not any("__pycache__" in f or f.startswith("model/") for f in files)
