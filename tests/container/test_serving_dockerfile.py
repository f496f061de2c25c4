"""The image definition, checked without a Docker engine: pinned base, port, exec-form entrypoint,
no build tools, offline settings, lint-clean (hadolint, shellcheck as `make lint` runs them)."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from container.serving import contract

REPO = Path(__file__).resolve().parents[2]
CONTAINER = REPO / "container"
BIN = Path(sys.executable).parent
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|clang|make|cmake|build-essential|cuda-nvcc|git|curl|wget|ninja)\b")


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with comments dropped and continuation lines joined."""
    joined = re.sub(
        r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))
    )
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def stages(path: Path) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Stage name -> (what it is built FROM, its instructions)."""
    result: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    current = None
    for instruction, arguments in instructions(path):
        if instruction == "FROM":
            image, _, name = arguments.partition(" AS ")
            current = name.strip() or image
            result[current] = (image.strip(), [])
        elif current is not None:
            result[current][1].append((instruction, arguments))
    return result


def chain(all_stages, name: str) -> list[tuple[str, str]]:
    """Instructions that shape a stage, its ancestors' first."""
    parent, own = all_stages[name]
    return (chain(all_stages, parent) if parent in all_stages else []) + own


STAGES = stages(CONTAINER / "Dockerfile")
FINAL = list(STAGES)[-1]
TARGETS = ("serving", "serving-with-weights")


def test_the_targets_exist_and_the_default_one_is_what_the_cdk_app_builds():
    """constructs/image_repository.py builds `--target serving`; a plain `docker build` gives the same."""
    assert set(TARGETS) <= set(STAGES) and FINAL == "serving"


def test_every_external_base_image_is_pinned_to_a_release():
    external = [image for image, _ in STAGES.values() if image not in STAGES]
    assert [image.split("@")[0] for image in external] == ["vllm/vllm-openai:v0.33.0"]
    for image in external:
        assert re.search(r"(:v?\d+\.\d+\.\d+$|:v?\d+\.\d+\.\d+@sha256:[0-9a-f]{64}$)", image), image


@pytest.mark.parametrize("target", TARGETS)
def test_port_8080_and_an_exec_form_entrypoint_that_runs_the_supervisor(target):
    inherited = chain(STAGES, target)
    assert ("EXPOSE", "8080") in inherited
    entrypoints = [arguments for instruction, arguments in inherited if instruction == "ENTRYPOINT"]
    assert json.loads(entrypoints[-1]) == ["python3", "-m", "serving.supervisor"]
    assert not any(instruction == "CMD" for instruction, _ in inherited)


@pytest.mark.parametrize("target", TARGETS)
def test_no_build_tools_are_installed(target):
    runs = [arguments for instruction, arguments in chain(STAGES, target) if instruction == "RUN"]
    assert not [run for run in runs if BUILD_TOOLS.search(run)]


@pytest.mark.parametrize("target", TARGETS)
def test_nothing_reaches_for_a_hub_at_start(target):
    env = " ".join(arguments for instruction, arguments in chain(STAGES, target) if instruction == "ENV")
    for setting in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "PYTHONPATH=/opt/serving"):
        assert setting in env


def test_weights_land_where_the_cdk_app_points_the_engine():
    """config/container_env.py sets SERVING_MODEL_DIR=/opt/ml/model/base and SERVING_LORA_DIR=/opt/ml/model/lora."""
    from config.container_env import LORA_DIR, MODEL_DIR

    copies = [
        arguments.split() for instruction, arguments in STAGES["serving-with-weights"][1] if instruction == "COPY"
    ]
    destinations = {destination.rstrip("/") for *_, destination in copies}
    assert {MODEL_DIR, LORA_DIR, "/opt/serving/serving"} <= destinations
    # Code after weights: a code change does not invalidate the weight layers.
    assert copies[-1][-1].rstrip("/") == "/opt/serving/serving"


def test_copied_sources_exist_and_the_context_sends_nothing_else():
    for target in TARGETS:
        for instruction, arguments in STAGES[target][1]:
            if instruction == "COPY" and not arguments.startswith("model/"):
                assert (CONTAINER / arguments.split()[0]).exists(), arguments
    ignore = [line for line in (CONTAINER / ".dockerignore").read_text().splitlines() if not line.startswith("#")]
    # The CDK app's source asset uses these patterns too: without !Dockerfile its build would have none.
    assert ignore[ignore.index("*") + 1 :][:3] == ["!Dockerfile", "!serving/", "!model/"]


def test_the_serving_package_needs_nothing_but_the_standard_library():
    """Nothing is pip-installed into vLLM's environment, so nothing can conflict with its pins."""
    stdlib = set(sys.stdlib_module_names)
    for module in (CONTAINER / "serving").glob("*.py"):
        # The syntax tree, not lines starting with "from": a docstring line may ("from the engine core's ...").
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in stdlib or top in ("__future__", "serving"), f"{module.name} imports {name}"
    assert contract.METRIC_NAMESPACE  # the shared contract ships in the same package


def test_hadolint_is_clean():
    result = subprocess.run([BIN / "hadolint", CONTAINER / "Dockerfile"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shellcheck_is_clean_on_every_shell_script():
    scripts = sorted(path for root in ("container", "workbench") for path in (REPO / root).rglob("*.sh"))
    assert scripts, "the test doubles for vllm and nvidia-smi are shell scripts"
    result = subprocess.run([BIN / "shellcheck", *scripts], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
