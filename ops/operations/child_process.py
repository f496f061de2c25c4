"""A child program (make deploy, the CDK CLI, jsii) that Ctrl-C stops without a word: the command says it, once.

The child runs in a session of its own, so the terminal's SIGINT reaches only this process; interrupted, this
process ends the child's group with SIGTERM (Python and Node end on it quietly), then SIGKILL after a grace.
The child's stderr comes through a pipe, copied as it arrives until the interrupt and nothing after (GNU make
reports each recipe a signal ended). stdout and stdin stay the terminal: the CDK CLI decides from stdout whether
a person is there (aws-cdk 2.1148 lib/index.js, CliIoHost `isTTY = process.stdout.isTTY`) for
`--require-approval` and its progress display.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ops.operations.interrupts import STOPPING

GRACE_SECONDS = 10.0  # for the child to end on SIGTERM before SIGKILL
# After the child ended, for the rest of its stderr: a process it left running (its own children) may hold the
# pipe open, and this command does not wait for those.
DRAIN_SECONDS = 5.0
PIPE_BYTES = 1 << 20  # more than a pipe holds: one read takes all of it


def _show(chunk: bytes) -> None:
    sys.stderr.flush()  # this process's own text first, in order
    if binary := getattr(sys.stderr, "buffer", None):
        binary.write(chunk)
        binary.flush()
    else:  # a text-only stream (a test's capture)
        sys.stderr.write(chunk.decode(errors="replace"))
        sys.stderr.flush()


class StderrRelay:
    """The child's stderr, copied to ours as it arrives until `silence()` (under a lock, so all it wrote before
    the interrupt is shown, then nothing); drained to its end all the same, so the child never blocks on it."""

    def __init__(self) -> None:
        self._fd, self.write_end = os.pipe()  # neither inherited by children (PEP 446) but as the child's stderr
        os.set_blocking(self._fd, False)
        self._lock = threading.Lock()
        self._quiet = False
        self._ended = False
        self._thread = threading.Thread(target=self._run, name="child-stderr", daemon=True)
        self._thread.start()

    def close_write_end(self) -> None:
        """Once the child has its copy: the pipe ends when the child (and whatever it left running) closes it."""
        os.close(self.write_end)

    def _run(self) -> None:
        readable = selectors.DefaultSelector()  # not select(): it cannot watch a descriptor numbered over 1023
        readable.register(self._fd, selectors.EVENT_READ)
        while True:
            readable.select()
            with self._lock:
                if not self._copy_available():
                    self._ended = True
                    readable.close()
                    os.close(self._fd)
                    return

    def _copy_available(self) -> bool:
        """One read of what the pipe holds now, shown unless silenced; False at its end."""
        try:
            chunk = os.read(self._fd, PIPE_BYTES)
        except BlockingIOError:
            return True
        if chunk and not self._quiet:
            try:
                _show(chunk)
            except (OSError, ValueError):  # this process's stderr is gone (a closed terminal): nothing can show
                self._quiet = True
        return bool(chunk)

    def silence(self) -> None:
        """At the interrupt, before the child is stopped: what it wrote until now is shown, nothing after."""
        with self._lock:
            if not self._ended:
                self._copy_available()
            self._quiet = True

    def finish(self) -> None:
        self._thread.join(timeout=DRAIN_SECONDS)


@contextmanager
def interrupt_held_while_starting() -> Iterator[None]:
    """An interrupt while Popen starts the child is raised once Popen has returned: raised inside it, after the
    fork, it would leave the child running and nothing to stop it. Handlers, not a blocked signal mask: the child
    would inherit the mask through exec, while exec resets handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler
        return
    raising = [sig for sig in STOPPING if callable(signal.getsignal(sig))]  # not those ignored or at their default
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in raising}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])  # to the handler that was there: the interrupt, now


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


def run_child(command: list[str], cwd: Path, env: dict[str, str] | None = None, stdout: int | None = None) -> int:
    """`command`'s exit code, its stderr relayed (stdout: the terminal's, or `stdout`); interrupted, its process
    group is stopped quietly and the KeyboardInterrupt goes on (a runtime hook's deploy run here stops its own
    child the same way)."""
    relay = StderrRelay()
    process = None
    try:
        try:
            with interrupt_held_while_starting():
                process = subprocess.Popen(
                    command, cwd=cwd, env=env, stdout=stdout, stderr=relay.write_end, start_new_session=True
                )
        finally:
            relay.close_write_end()
        code = process.wait()
        relay.finish()
        return code
    except KeyboardInterrupt:
        relay.silence()
        if process is not None:
            stop_group(process)
        raise
