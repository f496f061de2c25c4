"""`make test`'s two pytest sessions side by side (tools/test_sessions.py), run for real on a small suite of
their own: one closing line with the sum of both, the waiting session's output after the other's, the exit
code of the session that did not pass, and Ctrl-C ending both in their own words with 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.processes import start_foreground_job
from tools.test_sessions import closing_counts, combined

REPO = Path(__file__).resolve().parents[1]
PATIENCE_SECONDS = 60.0


def suite(root: Path, computing: str, waiting: str) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "computing").mkdir()
    (root / "computing" / "test_computing.py").write_text(computing)
    (root / "waiting").mkdir()
    (root / "waiting" / "test_waiting.py").write_text(waiting)


def sessions_command() -> list[str]:
    return [sys.executable, "-m", "tools.test_sessions", "--alongside", "waiting", "--workers", "1", "-q", "-p",
            "no:cacheprovider"]  # fmt: skip


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_one_closing_line_sums_both_and_the_session_that_failed_gives_the_exit_code(tmp_path: Path) -> None:
    suite(
        tmp_path,
        computing="def test_one():\n    pass\n\ndef test_two():\n    pass\n",
        waiting="import pytest\n\ndef test_fails():\n    assert 1 == 2\n\n"
        "@pytest.mark.skip(reason='x')\ndef test_skipped():\n    pass\n",
    )
    run = subprocess.run(sessions_command(), cwd=tmp_path, env=environment(), capture_output=True, text=True,
                         timeout=PATIENCE_SECONDS, check=False)  # fmt: skip

    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    header = lines.index("waiting, run alongside as a session of their own:")
    assert any(line.startswith("2 passed in ") for line in lines[:header])  # the computing session, as it ran
    assert "FAILED waiting/test_waiting.py::test_fails" in "\n".join(lines[header:])
    assert lines[-1].startswith("1 failed, 2 passed, 1 skipped in ") and lines[-1].endswith("s (both sessions)")
    assert "Traceback" not in run.stderr


def test_ctrl_c_ends_both_sessions_in_their_own_words_and_130(tmp_path: Path) -> None:
    """As a terminal sends it: SIGINT to the whole foreground group, once both sessions are running a test."""
    holding = "import pathlib, time\n\ndef test_holds():\n    pathlib.Path('{0}.started').touch()\n    time.sleep(60)\n"
    suite(tmp_path, computing=holding.format("computing"), waiting=holding.format("waiting"))
    process = start_foreground_job(
        sessions_command(), cwd=tmp_path, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not all((tmp_path / f"{name}.started").exists() for name in ("computing", "waiting")):
        assert time.monotonic() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.1)

    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=PATIENCE_SECONDS)

    assert process.returncode == 130, stdout + stderr
    before, after = stdout.split("waiting, run alongside as a session of their own:")
    assert "KeyboardInterrupt" in before and "KeyboardInterrupt" in after  # each session's own summary
    assert "Traceback" not in stderr


def test_counts_are_read_from_pytest_s_closing_line_and_summed_in_its_order() -> None:
    computing = closing_counts("....\n======= 1119 passed, 3 deselected in 103.23s (0:01:43) =======\n")
    waiting = closing_counts("F..\n1 failed, 258 passed, 7 deselected in 86.87s\n")
    assert computing == [("passed", 1119), ("deselected", 3)]
    assert combined([computing, waiting]) == "1 failed, 1377 passed, 10 deselected"
    assert closing_counts("!!! KeyboardInterrupt !!!\nno tests ran in 0.01s\n") is None
