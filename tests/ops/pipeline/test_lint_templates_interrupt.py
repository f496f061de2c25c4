"""Ctrl-C (SIGINT to the foreground group) during `make synth`'s cfn-lint step: one line, exit 130, no
traceback, every cfn-lint ended (issue 53 item 7). cfn-lint waits on a FIFO template nobody writes (fifo(7)).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.processes import alive, descendants, start_foreground_job

REPO = Path(__file__).resolve().parents[3]
PATIENCE_SECONDS = 60.0
# The recipe's own line: $(QUIET) 'MESSAGE' -- $(VENV)/bin/cfn-lint cdk.out/all/*.template.json
INTERRUPTED = re.search(r"^cfn-lint:.*?\n\t@\$\(QUIET\) '([^']+)' -- ", (REPO / "Makefile").read_text(), re.M | re.S).group(1)


def linting(pid: int) -> dict[int, str]:
    return {child: command for child, command in descendants(pid).items() if "cfn-lint" in command}


def test_ctrl_c_while_cfn_lint_runs_is_one_line_and_130(tmp_path: Path) -> None:
    template = tmp_path / "MangaAssist-dev-Serving.template.json"
    os.mkfifo(template)
    step = start_foreground_job(
        [sys.executable, "-m", "ops.pipeline.quiet_child", INTERRUPTED, "--", str(Path(sys.executable).parent / "cfn-lint"),
         str(template)],
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
