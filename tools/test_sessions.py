"""`python -m tools.test_sessions --alongside PATH... [--workers N] PYTEST_OPTION...`: `make test` as two pytest
sessions side by side, the PATHs (test folders or files) in one and the rest of the suite in the other.

Part of the suite mostly waits: tests/container runs the serving image as real processes against the
stand-in engine (token intervals, stall and drain timeouts) and tests/capacity runs open-loop sweeps whose
steps last seconds. The rest mostly computes (synthesis over jsii, moto, the planner, cfn-lint). In one
pytest-xdist session a worker that waits holds its share of files back, and every worker collects, so
imports, the whole suite (~7 s of CPU each). Here the waiting part (the Makefile names it) and the rest run
as two sessions at once, each on N workers (`--dist loadfile`: a file's fixtures run once): the waits overlap
the computing, and each worker imports only its own part. Measured side by side: docs/testing.md.

Both run in the current directory (make's: the repository). The computing session prints as it runs; the
waiting session's output follows once both are done, then one closing line in pytest's form with the sum of
both (tools/test_figures reads it). Exit status: the first session that did not pass (computing, then
waiting) gives its pytest code. Ctrl-C reaches both sessions from the terminal: each prints its own summary,
this waits for both and exits 130. SIGTERM is passed on to both (exit 143).
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO

# _pytest/terminal.py KNOWN_TYPES: the order of the words in pytest's closing line.
ORDER = ("failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "warnings", "error", "errors")
CLOSING = re.compile(r"^=*\s*(?P<counts>(?:\d+ \w+(?:, )?)+) in (?P<seconds>[\d.]+)s")


def pytest_command(workers: int, options: list[str], selection: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-n", str(workers), "--dist", "loadfile", *options, *selection]


def closing_counts(output: str) -> list[tuple[str, int]] | None:
    """The counts of pytest's closing line ("1 failed, 258 passed in 86.87s"), in its order; None without one."""
    for line in reversed(output.splitlines()):
        closing = CLOSING.match(line.strip())
        if closing:
            return [(word, int(number)) for number, word in re.findall(r"(\d+) (\w+)", closing.group("counts"))]
    return None


def combined(sessions: list[list[tuple[str, int]]]) -> str:
    """'1 failed, 1377 passed': each word's sum over the sessions, in the order pytest's own closing line uses."""
    totals: dict[str, int] = {}
    for counts in sessions:
        for word, number in counts:
            totals[word] = totals.get(word, 0) + number
    ordered = sorted(totals, key=lambda word: ORDER.index(word) if word in ORDER else len(ORDER))
    return ", ".join(f"{totals[word]} {word}" for word in ordered)


class Signals:
    """Ctrl-C is noted, not raised: the terminal sends it to both sessions too, and this waits for them.
    SIGTERM (a parent stopping this) is passed on to both. `exit_code`: 128 + the signal's number, or None."""

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.sessions: list[subprocess.Popen] = []
        signal.signal(signal.SIGINT, self._interrupt)
        signal.signal(signal.SIGTERM, self._terminate)

    def _interrupt(self, signum: int, _: object) -> None:
        self.exit_code = 128 + signum

    def _terminate(self, signum: int, _: object) -> None:
        self.exit_code = 128 + signum
        for session in self.sessions:
            session.terminate()


def relay(session: subprocess.Popen) -> str:
    """The session's output passed on as it comes (pytest's progress dots included); its last 64 KB kept."""
    kept = b""
    while chunk := session.stdout.read1(65536):  # type: ignore[union-attr]
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        kept = (kept + chunk)[-65536:]
    return kept.decode(errors="replace")


def run(
    alongside: list[str], workers: int, options: list[str], waiting_output: IO[str]
) -> tuple[list[int], list[str], int | None]:
    """Both sessions, started together: their exit codes and outputs (computing, waiting), and this command's
    exit code when Ctrl-C (130) or SIGTERM (143) stopped them."""
    signals = Signals()
    options = (["--color=yes"] if sys.stdout.isatty() else []) + options  # both write to pipes and files
    waiting = subprocess.Popen(
        pytest_command(workers, options, alongside), stdout=waiting_output, stderr=subprocess.STDOUT
    )
    computing = subprocess.Popen(
        pytest_command(workers, options, [f"--ignore={path}" for path in alongside]),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    signals.sessions = [computing, waiting]
    computing_text = relay(computing)
    codes = [computing.wait(), waiting.wait()]
    waiting_output.seek(0)
    return codes, [computing_text, waiting_output.read()], signals.exit_code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.test_sessions", description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    parser.add_argument("--alongside", nargs="+", required=True, metavar="PATH", help="the waiting session's tests")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers in each session (default 2)")
    known, options = parser.parse_known_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as waiting_output:
        codes, outputs, stopped = run(known.alongside, known.workers, options, waiting_output)
    print(f"\n{' and '.join(known.alongside)}, run alongside as a session of their own:", flush=True)
    sys.stdout.write(outputs[1])
    counts = [closing_counts(text) for text in outputs]
    if all(counts):
        print(f"{combined(counts)} in {time.monotonic() - started:.2f}s (both sessions)", flush=True)
    if stopped is not None:
        return stopped
    return next((code for code in codes if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
