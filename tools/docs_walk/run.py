"""Running one command of the walk as a person at a terminal would, and Ctrl-C as a terminal sends it.

Each command runs under `bash -c` in the walk's tree, in a process group of its own with SIGINT at its default
(a runner started in the background would otherwise pass SIGINT on ignored), stdout and stderr into one pipe so
the output reads in the order a terminal shows it. Ctrl-C is SIGINT to that whole group, as a terminal sends it
to its foreground job. CPU seconds are the command's and its waited-for children's (os.wait4's rusage): a
sandbox server started in the background is not counted.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# Commands that print their exports for `eval "$(...)"`: the walk applies them to the steps after.
EXPORT = re.compile(r"^export ([A-Z_][A-Z0-9_]*)=(.*)$")
UNSET = re.compile(r"^unset ((?:[A-Z_][A-Z0-9_]* ?)+)$")


@dataclass
class Result:
    command: str
    exit_status: int
    seconds: float
    cpu_seconds: float
    output: str
    interrupted_output: str | None = None  # what it printed after the SIGINT, when it was sent one
    timed_out: bool = False


@dataclass
class Running:
    """A command started and not yet waited for (a background step, or one about to be interrupted)."""

    command: str
    process: subprocess.Popen
    started: float
    chunks: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def output(self) -> str:
        return "".join(self.chunks)


# Commands started and not yet finished: the walk, interrupted itself, ends their groups (they are in sessions
# of their own, so its own Ctrl-C never reached them).
STARTED: list[Running] = []


def stop_all() -> None:
    for running in list(STARTED):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.process.pid, signal.SIGKILL)
        STARTED.remove(running)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(command: str, tree: Path, env: dict[str, str]) -> Running:
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_default_sigint,
    )  # fmt: skip
    running = Running(command, process, time.monotonic())
    STARTED.append(running)

    def read() -> None:
        for raw in iter(lambda: process.stdout.read1(65536), b""):  # type: ignore[union-attr]
            running.chunks.append(raw.decode(errors="replace"))

    running.reader = threading.Thread(target=read, daemon=True)
    running.reader.start()
    return running


def finish(running: Running, timeout: float, interrupted_at: int | None = None) -> Result:
    """Waits for the command (at most `timeout` seconds from its start, then SIGKILL to its group)."""
    pid = running.process.pid
    timed_out = False
    while True:
        waited, status, usage = os.wait4(pid, os.WNOHANG)
        if waited:
            break
        if time.monotonic() - running.started > timeout:
            os.killpg(pid, signal.SIGKILL)
            timed_out = True
            waited, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.05)
    seconds = time.monotonic() - running.started
    STARTED.remove(running)
    running.process.returncode = os.waitstatus_to_exitcode(status)
    assert running.reader is not None
    running.reader.join(timeout=10)
    code = running.process.returncode
    output = running.output()
    return Result(
        command=running.command,
        exit_status=128 - code if code < 0 else code,  # killed by signal N: the shell's 128 + N
        seconds=seconds,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        output=output,
        interrupted_output=None if interrupted_at is None else output[interrupted_at:],
        timed_out=timed_out,
    )


def interrupt(running: Running) -> int:
    """Ctrl-C: SIGINT to the command's process group. Returns how much output there was before it."""
    before = len(running.output())
    os.killpg(running.process.pid, signal.SIGINT)
    return before


def ended(running: Running) -> bool:
    """Whether the command has exited, without reaping it (finish's wait4 reads its CPU time then)."""
    return os.waitid(os.P_PID, running.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def wait_for(running: Running, ready: str | None, seconds: float) -> None:
    """Until `ready` (a regular expression) shows in the output, the command ends, or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ended(running):
        if ready and re.search(ready, running.output(), flags=re.MULTILINE):
            return
        time.sleep(0.1)


def run(command: str, tree: Path, env: dict[str, str], timeout: float) -> Result:
    return finish(start(command, tree, env), timeout)


def run_interrupted(command: str, tree: Path, env: dict[str, str], after: float, ready: str | None) -> Result:
    """The command, sent Ctrl-C once `ready` shows (or after `after` seconds); it then has 60 s to end."""
    running = start(command, tree, env)
    wait_for(running, ready, after)
    if ended(running):  # ended before it could be interrupted: reported as such
        return finish(running, timeout=10)
    at = interrupt(running)
    return finish(running, timeout=time.monotonic() - running.started + 60, interrupted_at=at)


def apply_exports(output: str, env: dict[str, str]) -> None:
    """What `eval "$(make -s sandbox)"` does to the shell: its export and unset lines."""
    for line in output.splitlines():
        if found := EXPORT.match(line):
            env[found.group(1)] = found.group(2)
        elif found := UNSET.match(line):
            for name in found.group(1).split():
                env.pop(name, None)
