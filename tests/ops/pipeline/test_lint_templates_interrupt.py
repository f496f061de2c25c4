"""Ctrl-C during `make synth`'s cfn-lint step (ops/pipeline/lint_templates.py), as a terminal sends it (SIGINT to the
whole foreground group): one line, exit 130, no traceback, and every cfn-lint it started has ended. Before, the
step printed a 20-line traceback (issue 53 item 7).

cfn-lint is held in the step deterministically: its template is a FIFO nobody writes, so it waits in open(2)
(fifo(7)) until the interrupt, whenever that comes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.processes import alive, descendants, start_foreground_job

REPO = Path(__file__).resolve().parents[3]
PATIENCE_SECONDS = 60.0
INTERRUPTED = "cfn-lint: interrupted; the templates in cdk.out/all are not all checked (`make cfn-lint` checks them)"


def linting(pid: int) -> dict[int, str]:
    return {child: command for child, command in descendants(pid).items() if "cfn-lint" in command}


def test_ctrl_c_while_cfn_lint_runs_is_one_line_and_130(tmp_path: Path) -> None:
    template = tmp_path / "MangaAssist-dev-Serving.template.json"
    os.mkfifo(template)
    step = start_foreground_job(
        [sys.executable, "-m", "ops.pipeline.lint_templates", str(template)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(step.pid, signal.SIGKILL))
    watchdog.start()
    try:
        while step.poll() is None and not linting(step.pid):
            time.sleep(0.05)
        started = linting(step.pid)
        os.killpg(step.pid, signal.SIGINT)
        out, errors = step.communicate()
    finally:
        watchdog.cancel()
    assert started, out + errors
    assert (step.returncode, errors) == (130, INTERRUPTED + "\n"), out + errors
    deadline = time.monotonic() + PATIENCE_SECONDS
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in started)  # stopped by the step, not left waiting on its FIFO
