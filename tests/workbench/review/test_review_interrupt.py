"""Ctrl-C in `python -m workbench.review` (`make review`), as a terminal sends it (SIGINT to the whole foreground process
group), once it says both synths run: its one line, exit 130, no traceback from it or from the CDK CLI, app.py or
jsii's Node under it, and every process it started ended (each synth is stopped and waited for before the scratch
directory they write to is removed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.processes import TRACEBACK, alive, descendants, start_foreground_job

ROOT = Path(__file__).resolve().parents[3]
PATIENCE_SECONDS = 120.0
INTERRUPTED = "review: interrupted; nothing was written"


def synthesising(pid: int) -> bool:
    """An app.py under the review's CDK CLIs has started jsii's Node (jsii-runtime.js): a synth is under way."""
    return any("jsii-runtime" in command for command in descendants(pid).values())


def test_ctrl_c_while_it_synthesises_is_one_line_and_exit_130(tmp_path: Path) -> None:
    out = tmp_path / "review.md"
    review = start_foreground_job(
        [sys.executable, "-m", "workbench.review", "HEAD", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(review.pid, signal.SIGKILL))
    watchdog.start()
    try:
        said = review.stderr.readline()  # BASE exported, both synths started: the work is under way
        assert said.startswith("synthesising HEAD ("), said + review.stderr.read()
        while review.poll() is None and not synthesising(review.pid):
            time.sleep(0.05)
        started = descendants(review.pid)
        os.killpg(review.pid, signal.SIGINT)
        stdout, stderr = review.communicate()
    finally:
        watchdog.cancel()
    assert review.returncode == 130, stdout + stderr
    assert stderr.splitlines() == [INTERRUPTED]
    assert not TRACEBACK.search(stdout + stderr), stdout + stderr
    assert not out.exists()
    deadline = time.monotonic() + PATIENCE_SECONDS
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in started)
