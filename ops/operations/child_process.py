"""A child program (make deploy, make synth and the CDK CLI, jsii and the Python app under them) that Ctrl-C
stops without a traceback from any of them.

A terminal's Ctrl-C sends SIGINT to every process of its foreground process group: Python under the CDK CLI
prints a KeyboardInterrupt traceback, jsii's Node prints its own, and the CLI echoes them again as bytes.
So the child runs in a session of its own (the terminal's SIGINT reaches only this process), and when this
process is interrupted it ends the child's whole group with SIGTERM, which Python and Node end on quietly
(default action, no handler), then SIGKILL after a grace period; KeyboardInterrupt then goes on up to the
command, which says so in one line and exits 130.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

GRACE_SECONDS = 10.0  # for the child to end on SIGTERM before SIGKILL


class ParentStopped(KeyboardInterrupt):
    """SIGTERM while a child ran: the program that started this one was interrupted and stops it. This one
    stops its own child the same way and ends without a word (the interrupted program says it, once)."""


def _raise_parent_stopped(signum: int, frame: object) -> None:
    raise ParentStopped


def stop_group(process: subprocess.Popen, grace_seconds: float = GRACE_SECONDS) -> None:
    """SIGTERM to the child's process group, SIGKILL if it is still there after `grace_seconds`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace_seconds)
            return
        except subprocess.TimeoutExpired:
            continue


def run_child(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> int:
    """Runs `command` to its end with the terminal's output, and returns its exit code; on Ctrl-C, stops its
    process group quietly and raises KeyboardInterrupt."""
    process = subprocess.Popen(command, cwd=cwd, env=env, start_new_session=True)
    # A program run by run_child (the sandbox's deploy under `bin/ops deploy`) is itself in a session of its
    # own: the SIGTERM its parent sends must reach this child's group too, so it is turned into an interrupt.
    main = threading.current_thread() is threading.main_thread()  # only the main thread may set a handler
    previous = signal.signal(signal.SIGTERM, _raise_parent_stopped) if main else None
    try:
        return process.wait()
    except KeyboardInterrupt:
        stop_group(process)
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
