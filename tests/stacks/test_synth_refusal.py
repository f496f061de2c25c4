"""A new user's mistakes, run through the real app.py process: refused with field names, no traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _app_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "app"
    for name in ("config", "constructs", "stacks", "ops"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        ROOT / "container" / "serving",
        copy / "container" / "serving",
        ignore=shutil.ignore_patterns("__pycache__", "tests"),
    )
    shutil.copy(ROOT / "app.py", copy / "app.py")
    # nothing beyond config/ is needed: the default workload the ceiling reads is config/workload.yaml
    return copy


def _synth(app_dir: Path, env_name: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CDK_CONTEXT_JSON": f'{{"env": "{env_name}"}}', "CDK_OUTDIR": str(app_dir / "cdk.out")}
    return subprocess.run([sys.executable, "app.py"], cwd=app_dir, env=env, capture_output=True, text=True, timeout=120)


def test_three_mistakes_in_prod_are_all_reported_before_any_template(tmp_path: Path) -> None:
    app_dir = _app_copy(tmp_path)
    prod = app_dir / "config" / "environments" / "prod.yaml"
    text = prod.read_text()
    text = text.replace("initial_weight: 5\n", "initial_weight: -5\n")  # the canary
    text = text.replace("startup_health_check_timeout_seconds: 900", "startup_health_check_timeout_seconds: 300")
    prod.write_text(text)

    result = _synth(app_dir, "prod")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "variants[1].initial_weight: Input should be greater than or equal to 0, got -5" in result.stderr
    assert "container.startup_health_check_timeout_seconds: a 8B model needs at least 600 s" in result.stderr
    assert not (app_dir / "cdk.out" / "MangaAssist-prod-Serving.template.json").exists()


@pytest.mark.slow  # an end-to-end run a cheaper test already covers: `make test-slow` (docs/testing.md)
def test_g4dn_is_refused_with_the_vram_numbers(tmp_path: Path) -> None:
    app_dir = _app_copy(tmp_path)
    prod = app_dir / "config" / "environments" / "prod.yaml"
    prod.write_text(prod.read_text().replace("instance_type: ml.g5.xlarge", "instance_type: ml.g4dn.xlarge"))

    result = _synth(app_dir, "prod")

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "variants[0].instance_type: ml.g4dn.xlarge is too small" in result.stderr
    assert "16 GiB x 0.92 = 14.72 GiB usable" in result.stderr


def test_unknown_environment(tmp_path: Path) -> None:
    result = _synth(_app_copy(tmp_path), "qa")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "unknown environment 'qa'; known: dev, prod, staging" in result.stderr


def test_make_synth_mode_reports_every_broken_environment(tmp_path: Path) -> None:
    """`-c env=all` (what `make synth` runs) lists the problems of each broken file, then stops."""
    app_dir = _app_copy(tmp_path)
    environments = app_dir / "config" / "environments"
    for env_name in ("staging", "prod"):
        path = environments / f"{env_name}.yaml"
        path.write_text(path.read_text().replace("max_lora_rank: 16", "max_lora_rank: 24"))

    result = _synth(app_dir, "all")

    assert result.returncode == 1 and "Traceback" not in result.stderr
    for env_name in ("staging", "prod"):
        assert f"config/environments/{env_name}.yaml: 1 problem(s)" in result.stderr
    assert "dev.yaml" not in result.stderr
    assert result.stderr.count("engine.max_lora_rank: must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512, got 24") == 2


def test_the_cdk_cli_exits_non_zero_with_no_template_and_no_traceback(tmp_path: Path) -> None:
    """The real `cdk synth` (node_modules), as `make synth` runs it, on a file that is not UTF-8 and
    a region aws-cdk-lib does not know (before: a traceback from jsii and partial templates)."""
    app_dir = _app_copy(tmp_path)
    (app_dir / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py", "context": {}}))
    staging = app_dir / "config" / "environments" / "staging.yaml"
    staging.write_bytes(staging.read_bytes().replace(b"canary rollout", b"canary \xff rollout"))
    prod = app_dir / "config" / "environments" / "prod.yaml"
    prod.write_text(prod.read_text().replace("region: ap-northeast-1", "region: ap-northeast-9"))
    out = app_dir / "cdk.out" / "all"
    out.mkdir(parents=True)
    (out / "MangaAssist-dev-Serving.template.json").write_text("{}")  # an earlier synth's: must go too
    result = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cdk"), "synth", "--ci", "--no-notices", "--no-version-reporting",
         "--quiet", "-c", "env=all", "-o", str(out)],
        cwd=app_dir,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    assert "config/environments/staging.yaml: 1 problem(s)" in output
    assert "(file): is not UTF-8: byte 0xff at line 1" in output
    assert "region: not a region aws-cdk-lib 2.275.0 knows" in output and "got 'ap-northeast-9'" in output
    assert not list(out.glob("*.template.json"))


@pytest.mark.slow  # an end-to-end run a cheaper test already covers: `make test-slow` (docs/testing.md)
def test_platform_mistakes_are_refused_before_any_template(tmp_path: Path) -> None:
    """An AMI too old for the image, the seeds' 10 % canary step and a quota too small, all at once."""
    app_dir = _app_copy(tmp_path)
    prod = app_dir / "config" / "environments" / "prod.yaml"
    text = prod.read_text().replace("al2023-ami-sagemaker-inference-gpu-4-1", "al2-ami-sagemaker-inference-gpu-2", 1)
    text = text.replace(
        "traffic_routing: ALL_AT_ONCE", "traffic_routing: CANARY\n  step_size: {type: CAPACITY_PERCENT, value: 10}"
    )
    # The seeds' canary of one instance (prod's is 3): its 10 % step is a whole instance, 100 % of it.
    canary = text.index("- name: canary")
    text = text[:canary] + re.sub(r"initial_instance_count: \d+", "initial_instance_count: 1", text[canary:], count=1)
    text = re.sub(r"(\n  canary:\n    min_capacity: )\d+", r"\g<1>1", text, count=1)
    prod.write_text(text.replace("ml.g5.xlarge: 226", "ml.g5.xlarge: 20"))

    result = _synth(app_dir, "prod")

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "variants[0].inference_ami_version: variant 'primary': al2-ami-sagemaker-inference-gpu-2 has NVIDIA "
        "driver 535 (CUDA 12.2), too old for the serving image vllm/vllm-openai:v0.33.0 (CUDA 13.0)" in result.stderr
    )
    assert "deployment.step_size: CANARY step of 1 instance(s) is 100% of variant 'canary'" in result.stderr
    assert "endpoint_instance_quotas.ml.g5.xlarge: quota 20 is below 226" in result.stderr
    assert not (app_dir / "cdk.out" / "MangaAssist-prod-Serving.template.json").exists()


def test_renaming_a_deployed_variant_is_refused_by_the_app(tmp_path: Path) -> None:
    app_dir = _app_copy(tmp_path)
    prod = app_dir / "config" / "environments" / "prod.yaml"
    prod.write_text(
        prod.read_text().replace("- name: canary", "- name: canary-b").replace("  canary:\n", "  canary-b:\n")
    )

    result = _synth(app_dir, "prod")

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "variants[1]: renames deployed variant 'canary' to 'canary-b' (config/deployed/prod.json, written by the last "
        "real `make deploy`; sandbox deploys never change it)" in result.stderr
    )
