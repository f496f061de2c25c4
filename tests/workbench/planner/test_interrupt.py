"""Ctrl-C in a terminal, for real: `bin/plan prod` (and with --tune) as its own process group with SIGINT at its
default (a runner started in the background passes it on ignored), SIGINT to the whole group once the planner says
its work is under way. The user reads one line and gets exit 130: no traceback, no "Aborted!", no silent exit."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.processes import start_foreground_job
from workbench.planner.__main__ import INTERRUPTED

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("options", "working", "would_write"),
    [([], "planning prod: ", "summary.md"), (["--tune"], "tuning prod: ", "tune.md")],
    ids=["plan", "tune"],
)
def test_ctrl_c_while_it_works_is_one_line_and_exit_130(
    options: list[str], working: str, would_write: str, tmp_path: Path
) -> None:
    plan = start_foreground_job(
        [str(ROOT / "bin/plan"), "prod", *options, "--out", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(300, plan.kill)  # a hung planner fails the test instead of hanging it
    watchdog.start()
    try:
        said = plan.stderr.readline()  # its inputs read and checked: the simulation or the search follows
        assert said.startswith(working), said + plan.stderr.read()
        os.killpg(plan.pid, signal.SIGINT)
        out, errors = plan.communicate(timeout=120)
    finally:
        watchdog.cancel()
    assert plan.returncode == 130, out + errors
    assert errors.splitlines() == [INTERRUPTED]
    assert "Traceback" not in out + errors and "Aborted" not in out + errors
    assert not (tmp_path / would_write).exists()  # nothing more was done
