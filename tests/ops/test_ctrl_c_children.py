"""Ctrl-C (SIGINT to the foreground group) ends a command and its children in one line, exit 130, no traceback
(ops/operations/child_process.py). These processes start with SIGINT at its default.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.processes import start_foreground_job
from workbench.sandbox.server import State

REPO = Path(__file__).resolve().parents[2]
PATIENCE_SECONDS = 60.0
# A child that prints a KeyboardInterrupt traceback if SIGINT reaches it, and its pid, then waits.
SLEEPER = "import os, time; print('ready', os.getpid(), flush=True); time.sleep(120)"


def start_in_own_group(command: list[str], **options) -> subprocess.Popen:
    return start_foreground_job(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def wait_for_line(process: subprocess.Popen, starts: str) -> str:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith(starts):
            return line
        assert line or process.poll() is None, f"exited {process.returncode}: {process.stderr.read()}"
    raise AssertionError(f"no line starting {starts!r}")


def ctrl_c(process: subprocess.Popen) -> tuple[int, str]:
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=PATIENCE_SECONDS)
    return process.returncode, stderr


def gone(pid: int) -> bool:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def parent_script(child: list[str]) -> list[str]:
    """A command that runs `child` with run_child behind the entry point every command has (ops/operations/interrupts.py)."""
    code = (
        "from ops.operations.interrupts import entry_point\nfrom ops.operations.child_process import run_child\n"
        f"entry_point(lambda: run_child({child!r}, {str(REPO)!r}), 'error: interrupted')\n"
    )
    return [sys.executable, "-c", code]


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["ctrl-c", "SIGTERM", "SIGHUP"]
)
def test_an_interrupt_stops_the_child_quietly_and_the_command_says_it_once(sig: int, code: int) -> None:
    """Ctrl-C to the whole group; `kill`, a CI job cancelled, a closed terminal to the command alone."""
    command = start_in_own_group(parent_script([sys.executable, "-c", SLEEPER]))
    child = int(wait_for_line(command, "ready").split()[1])
    if sig == signal.SIGINT:
        os.killpg(command.pid, sig)
    else:
        command.send_signal(sig)
    _, stderr = command.communicate(timeout=PATIENCE_SECONDS)
    assert (command.returncode, stderr) == (code, "error: interrupted\n")  # no traceback, the child's included
    assert gone(child)


def test_a_child_that_runs_children_of_its_own_stops_them_too() -> None:
    """`bin/ops deploy` -> the sandbox's deploy -> make synth: each level in a session of its own."""
    command = start_in_own_group(parent_script(parent_script([sys.executable, "-c", SLEEPER])))
    grandchild = int(wait_for_line(command, "ready").split()[1])
    code, stderr = ctrl_c(command)
    assert (code, stderr) == (130, "error: interrupted\n")
    assert gone(grandchild)


# make runs a sub-make whose recipe prints to stderr, then says it is ready and waits: what `bin/ops deploy` ->
# the sandbox's deploy -> make synth -> make cfn-lint looks like when Ctrl-C lands.
NESTED_MAKEFILE = """
outer:
\t@$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) inner
inner:
\t@echo "building" >&2; echo "ready"; sleep 120
"""


def interrupted_make(tmp_path: Path, levels: int) -> tuple[int, str]:
    """Ctrl-C to `levels` commands, each running the next with run_child, the last running the nested make."""
    makefile = tmp_path / "Makefile"
    makefile.write_text(NESTED_MAKEFILE)
    command = ["make", "--no-print-directory", "-f", str(makefile)]
    for _ in range(levels):
        command = parent_script(command)
    process = start_in_own_group(command)
    wait_for_line(process, "ready")
    return ctrl_c(process)


def test_make_interrupted_under_a_command_reports_nothing_of_its_own(tmp_path: Path) -> None:
    """GNU make's "*** [Makefile:5: inner] Terminated" lines are not shown; what it wrote before is."""
    assert interrupted_make(tmp_path, levels=1) == (130, "building\nerror: interrupted\n")


def test_make_interrupted_under_nested_commands_reports_nothing_of_its_own(tmp_path: Path) -> None:
    """A middle command stopped by its parent shows nothing of make's either ("building" may pass or not)."""
    code, stderr = interrupted_make(tmp_path, levels=2)
    assert code == 130
    assert [line for line in stderr.splitlines() if line != "building"] == ["error: interrupted"]


def test_what_the_child_writes_to_stderr_shows_as_it_comes_a_prompt_without_its_newline_too() -> None:
    """Bytes as they arrive, not lines: the CDK CLI's "(y/n)" question shows while the child waits."""
    prompt = "Do you wish to deploy these changes (y/n)? "
    child = f"import sys, time; sys.stderr.write({prompt!r}); sys.stderr.flush(); time.sleep(120)"
    command = start_in_own_group(parent_script([sys.executable, "-c", child]))
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(command.pid, signal.SIGKILL))
    watchdog.start()
    try:
        shown = command.stderr.read(len(prompt))
    finally:
        watchdog.cancel()
    assert shown == prompt
    code, stderr = ctrl_c(command)
    assert (code, stderr) == (130, "error: interrupted\n")


def test_a_child_s_exit_code_and_all_it_wrote_come_through() -> None:
    """More than a pipe holds, written just before the child exits, all shown before run_child returns."""
    child = "import sys; sys.stderr.write('x' * 300_000); sys.exit(3)"
    done = subprocess.run(
        parent_script([sys.executable, "-c", child]), cwd=REPO, capture_output=True, text=True, timeout=PATIENCE_SECONDS
    )
    assert (done.returncode, done.stderr) == (3, "x" * 300_000)


def test_without_it_the_child_s_traceback_reaches_the_terminal() -> None:
    """The failure the helper prevents, shown: a plain child in the same group prints its own traceback."""
    code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {SLEEPER!r}])"
    command = start_in_own_group([sys.executable, "-c", code])
    wait_for_line(command, "ready")
    _, stderr = ctrl_c(command)
    assert stderr.count("KeyboardInterrupt") >= 2


def test_sandbox_traffic_follow_ends_in_one_line_and_130(moto_sandbox: State, tmp_path: Path) -> None:
    state_dir = tmp_path / "sandbox"
    state_dir.mkdir()
    moto_sandbox.save(state_dir / "prod.json")
    options = ["--follow", "--streams", "0", "--state-dir", str(state_dir)]
    command = start_in_own_group([sys.executable, "-m", "workbench.sandbox", "traffic", "prod", *options])
    wait_for_line(command, "sandbox traffic, last minute:")  # then it sleeps until the next minute
    code, stderr = ctrl_c(command)
    assert (code, stderr) == (130, "sandbox: interrupted; the sandbox keeps what was done before\n")


def test_ctrl_c_while_the_child_starts_still_stops_it(monkeypatch, tmp_path: Path) -> None:
    """An interrupt right after the fork, while Popen waits for the exec (here every time, by wrapping
    Popen's start of the child), still stops the child."""
    from ops.operations import child_process

    started: list[int] = []
    start_child = subprocess.Popen._execute_child

    def start_then_interrupt(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        start_child(self, *args, **kwargs)
        started.append(self.pid)
        os.kill(os.getpid(), signal.SIGINT)  # this process, as the terminal's Ctrl-C reaches it

    monkeypatch.setattr(subprocess.Popen, "_execute_child", start_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a runner started in the background ignores it
    try:
        with pytest.raises(KeyboardInterrupt):
            child_process.run_child([sys.executable, "-c", SLEEPER], tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert started and gone(started[0])
