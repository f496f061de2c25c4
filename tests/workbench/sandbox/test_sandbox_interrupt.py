"""Ctrl-C while `python -m workbench.sandbox` still loads its libraries, as a terminal sends it (SIGINT to the whole
foreground group): its one line and exit 130, no traceback. Before, its handler was installed only after its imports.

The command is held in its imports deterministically: an `httpx` first on its path says so, then waits in open(2) on a
FIFO nobody writes (fifo(7)) until the interrupt, whenever that comes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.processes import start_foreground_job
from workbench.sandbox.__main__ import INTERRUPTED

REPO = Path(__file__).resolve().parents[3]
PATIENCE_SECONDS = 60.0


def test_ctrl_c_while_it_loads_its_libraries_is_one_line_and_130(tmp_path: Path) -> None:
    never_written = tmp_path / "fifo"
    os.mkfifo(never_written)
    libraries = tmp_path / "libraries"
    libraries.mkdir()
    (libraries / "httpx.py").write_text(f"print('loading', flush=True)\nopen({str(never_written)!r}).close()\n")
    path = os.pathsep.join(filter(None, (str(libraries), os.environ.get("PYTHONPATH"))))
    sandbox = start_foreground_job(
        [sys.executable, "-m", "workbench.sandbox", "stop", "prod", "--state-dir", str(tmp_path / "state")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": path},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(sandbox.pid, signal.SIGKILL))
    watchdog.start()
    try:
        said = sandbox.stdout.readline()  # in its imports, and held there
        assert said == "loading\n", said + sandbox.stderr.read()
        os.killpg(sandbox.pid, signal.SIGINT)
        out, errors = sandbox.communicate()
    finally:
        watchdog.cancel()
    assert (sandbox.returncode, errors) == (130, INTERRUPTED + "\n"), out + errors
