"""Ctrl-C in the planner's commands: one line on stderr and exit 130, never a traceback.

typer turns a KeyboardInterrupt inside a command into exit 130 saying nothing, and one while the
libraries load (matplotlib, pydantic: most of a short run) is a Python traceback; `interruptible` wraps
each command and workbench/planner/__main__.py the loading. What the line says holds wherever the interrupt lands:
the planner writes its files last and a config edit (--write-config) replaces the file whole
(config/editor.py), so nothing is left half-changed.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

INTERRUPTED = "planner: interrupted; nothing more was done (a config file is only ever replaced whole)"
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process ended by Ctrl-C


def interruptible(command: Callable) -> Callable:
    """`command` with Ctrl-C turned into the one line and exit 130 (typer reads its signature through this)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            stop()

    return run


def stop() -> None:
    """Say so and exit 130 at once. Not SystemExit: a Ctrl-C landing while the libraries load sometimes ended
    the process by SIGINT (-2) after this line and SystemExit(130) (seen here, about 1 run in 6): CPython's
    Py_RunMain re-sends SIGINT at exit once it has recorded a KeyboardInterrupt as unhandled
    (_Py_UnhandledKeyboardInterrupt, Modules/main.c), whatever exit code it was given."""
    print(INTERRUPTED, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)
