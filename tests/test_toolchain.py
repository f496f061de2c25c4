"""Node.js comes with the pinned toolchain: the machine's node, npm and npx are never used."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ops.pipeline.toolchain import JSII_NODE
from tests.processes import alive, descendants, start_foreground_job

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
PATIENCE_SECONDS = 120.0
# A test that starts jsii's Node (an App), says so, then waits to be interrupted.
WAITING_TEST = """
import time
import aws_cdk

def test_waits():
    aws_cdk.App()
    print("ready", flush=True)
    time.sleep(300)
"""


def broken_node(tmp_path: Path) -> Path:
    """A directory whose node, npm and npx fail loudly, first on PATH."""
    shims = tmp_path / "broken"
    shims.mkdir()
    for name in ("node", "npm", "npx"):
        (shims / name).write_text("#!/bin/sh\necho 'the machine node was used' >&2\nexit 97\n")
        (shims / name).chmod(0o755)
    return shims


def test_the_virtualenv_has_node_24_npm_and_npx():
    version = subprocess.run([str(VENV_BIN / "node"), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("v24.")
    for tool in ("npm", "npx"):
        assert (VENV_BIN / tool).exists()


def test_jsii_starts_on_the_pinned_node_when_the_machines_is_broken(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("JSII_NODE",)}
    env["PATH"] = f"{broken_node(tmp_path)}{os.pathsep}/usr/bin{os.pathsep}/bin"
    code = (
        "from ops.pipeline.toolchain import use_pinned_node; use_pinned_node(); import aws_cdk; "
        "print(aws_cdk.region_info.RegionInfo.get('ap-northeast-1').name)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ap-northeast-1"
    assert "the machine node was used" not in done.stderr
    assert "end-of-life" not in done.stderr.lower()  # no jsii banner: Node 24 is supported


def test_the_makefile_runs_npm_and_the_cdk_on_the_pinned_node():
    makefile = (REPO / "Makefile").read_text()
    assert "export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)" in makefile
    assert f"export JSII_NODE := $(CURDIR)/{JSII_NODE.relative_to(REPO)}" in makefile  # what pytest alone uses
    assert "$(VENV)/bin/npm ci" in makefile
    assert "JSII_SILENCE" not in makefile


@pytest.mark.slow  # an end-to-end run a cheaper test already covers: `make test-slow` (docs/explanation/testing.md)
def test_the_deploy_path_runs_the_cdk_cli_on_the_pinned_node(tmp_path):
    """`make bootstrap` goes through the same CDK CLI as `make deploy`: without credentials it gets as far as
    asking for them, on Node 24 (no "AWS SDK for JavaScript (v3) will require node >= 22" warning)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "JSII_"))}
    env.update(
        PATH=f"{broken_node(tmp_path)}{os.pathsep}{os.environ['PATH']}",
        HOME=str(tmp_path),  # no ~/.aws
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )
    done = subprocess.run(
        # The execution policies given, so that the CDK CLI is reached (ops.pipeline.execution_policy would
        # stop first, on the same missing credentials).
        ["make", "--no-print-directory", "bootstrap", "ENV=staging",
         "EXECUTION_POLICIES=arn:aws:iam::111111111111:policy/MangaAssist-CloudFormationExecution-1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "Need to perform AWS calls for account 111111111111, but no credentials have been configured" in output
    assert "the machine node was used" not in output
    assert "will require node" not in output.lower() and "end-of-life" not in output.lower()


def test_ctrl_c_in_a_test_that_started_jsii_is_pytests_summary_and_node_stops(tmp_path):
    """`make test` interrupted as a terminal does it (SIGINT to the whole process group): jsii's Node, in a session
    of its own (ops/pipeline/jsii_node.py), neither dies mid-call (a Node traceback relayed as b'...' lines) nor leaves
    jsii's exit hook a broken pipe ("Exception ignored in atexit callback"); pytest stops it as it exits."""
    (tmp_path / "test_waits.py").write_text(WAITING_TEST)
    env = {k: v for k, v in os.environ.items() if k != "JSII_NODE"}  # as tests/conftest.py sets it
    pytest_run = start_foreground_job(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), str(tmp_path / "test_waits.py")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(pytest_run.pid, signal.SIGKILL))
    watchdog.start()
    try:
        before = pytest_run.stdout.readline()
        while before and "ready" not in before:
            before = pytest_run.stdout.readline()
        assert before, "the test ended before it could be interrupted"
        node = descendants(pytest_run.pid)
        assert node  # jsii's Node (through the wrapper and the pinned node's shim)
        os.killpg(pytest_run.pid, signal.SIGINT)
        output = pytest_run.stdout.read()
        pytest_run.wait()
    finally:
        watchdog.cancel()
    assert pytest_run.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output  # pytest's own summary of the interrupt
    assert "Traceback" not in output and "Exception ignored" not in output and "b'" not in output, output
    deadline = time.monotonic() + PATIENCE_SECONDS
    while any(alive(pid) for pid in node) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in node)


def test_importing_config_changes_no_environment_variable():
    """Issue 49: only entry points (app.py, the test session) set the toolchain up; a library import does not."""
    code = "import os; before = dict(os.environ); import config; print(dict(os.environ) == before)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr
