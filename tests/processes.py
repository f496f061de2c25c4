"""The processes a test started, read from /proc (proc(5)): for Ctrl-C tests that check what was running and that
everything under the interrupted command ended."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any

# A traceback in an interrupted command's output: Python's, a Node stack frame (jsii, the CDK CLI), a relayed rejection.
TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+|KeyboardInterrupt|"
    r"^\s+at .+[(\s][^()\s]+:\d+:\d+\)?$|UnhandledPromiseRejection",
    re.MULTILINE,
)
# GNU make's own report that its recipe was interrupted (it always adds one); the command's line is the other one.
MAKE_REPORT = re.compile(r"^make(\[\d+\])?: \*\*\* \[[^]]*\] (Interrupt|Error 130)$")


def descendants(pid: int) -> dict[int, str]:
    """Every live process under `pid`, with its command line. The parent pid is /proc/PID/stat's 4th field; a
    process in a session of its own, such as jsii's Node, is still its starter's child."""
    parents, commands = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            commands[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (FileNotFoundError, ProcessLookupError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return {child: commands[child] for child in found if child in commands}


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie has ended: only its parent's wait is missing)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def start_foreground_job(command: list[str], **options: Any) -> subprocess.Popen:
    """`command` started as a terminal starts a foreground job: a process group of its own (so a test's
    `os.killpg(process.pid, SIGINT)` is a terminal's Ctrl-C) and SIGINT at its default (a test runner started
    in the background passes it on ignored). `options` go to Popen."""
    return subprocess.Popen(
        command, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **options
    )
