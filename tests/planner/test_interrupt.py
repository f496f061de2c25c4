"""Ctrl-C in a terminal, for real: `bin/plan prod --tune` as its own process group with SIGINT at its default
(a runner started in the background passes it on ignored), SIGINT to the whole group once the search is
under way. The user reads one line and gets exit 130: no traceback, no "Aborted!", no silent exit."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from planner.interrupt import INTERRUPTED

ROOT = Path(__file__).resolve().parents[2]
LOADED_CPU_SECONDS = 3.0  # more than loading the libraries and checking prod's config take: the search runs


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (proc(5): fields 14 and 15 of /proc/PID/stat, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_ctrl_c_during_the_search_is_one_line_and_exit_130(tmp_path: Path) -> None:
    plan = subprocess.Popen(
        [str(ROOT / "bin/plan"), "prod", "--tune", "--out", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    watchdog = threading.Timer(300, plan.kill)  # a hung planner fails the test instead of hanging it
    watchdog.start()
    try:
        while plan.poll() is None and cpu_seconds(plan.pid) < LOADED_CPU_SECONDS:
            time.sleep(0.1)  # bin/plan has exec'd the planner under the same pid: its CPU is the planner's
        assert plan.poll() is None, "the search ended before it could be interrupted"
        os.killpg(plan.pid, signal.SIGINT)
        out, errors = plan.communicate(timeout=120)
    finally:
        watchdog.cancel()
    assert plan.returncode == 130, out + errors
    assert errors.splitlines() == [INTERRUPTED]
    assert "Traceback" not in out + errors and "Aborted" not in out + errors
    assert not (tmp_path / "tune.md").exists()  # nothing more was done
