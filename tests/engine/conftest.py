"""The real-engine tier: the serving image's code against vLLM itself (its CPU build, `make test-engine`).

The engine virtualenv (.venv-engine, or ENGINE_VENV) holds vLLM; pytest runs from the project's .venv
and starts the supervisor exactly as the image does, with the engine's `vllm` first on PATH. The only
test double left is `nvidia-smi` (there is no GPU here). The CPU differences go through the same
SERVING_* variables the stacks set (see engine_env).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "container"))  # emf_check


def engine_venv() -> Path:
    return Path(os.environ.get("ENGINE_VENV", REPO / ".venv-engine")).resolve()


@pytest.fixture(scope="session")
def venv() -> Path:
    path = engine_venv()
    if not (path / "bin" / "vllm").exists():
        pytest.fail(f"no vLLM in {path}: run `make test-engine`, which installs it from requirements-engine.txt")
    return path


@pytest.fixture(scope="session")
def model_dir(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random Llama and the three adapters, generated once per run (never committed)."""
    from workbench.standin.harness import ADAPTERS

    out = tmp_path_factory.mktemp("model")
    made = subprocess.run(
        [str(venv / "bin" / "python"), str(HERE / "tiny_model.py"), str(out), *ADAPTERS],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    if made.returncode != 0:
        pytest.fail(f"tiny_model.py failed ({made.returncode}):\n{made.stderr[-4000:]}")
    return out


@pytest.fixture(scope="session")
def containers(venv: Path, model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """Both containers the tier needs start together: vLLM's start is mostly one process importing
    after another, so on two cores two starts take about as long as one. test_real_engine.py drains
    one with SIGTERM; test_engine_death.py kills the other's engine core."""
    from engine_harness import launch

    started = {name: launch(tmp_path_factory, name, venv, model_dir) for name in ("real-engine", "engine-death")}
    yield started
    for serving in started.values():
        serving.close()
