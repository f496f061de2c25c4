"""Ctrl-C, SIGTERM and SIGHUP, once, at a command's entry point.

Each is raised as `Interrupted`, a KeyboardInterrupt that knows its signal, so state-changing code handles all
three in one `except KeyboardInterrupt`; the command ends in one line and 128 + the signal (130, 143, 129).
A signal ignored at start stays ignored (`nohup`; POSIX "Shell Command Language", 2.11 Signals).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP, raised wherever the command was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(interrupt: BaseException) -> int:
    """128 + the signal's number; a plain KeyboardInterrupt (Python's own SIGINT handler) is Ctrl-C's 130."""
    return 128 + getattr(interrupt, "signum", signal.SIGINT)


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def install() -> None:
    """SIGINT, SIGTERM and SIGHUP raise `Interrupted` from here on (main thread only, as every handler)."""
    for sig in STOPPING:
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, _raise_interrupted)


class _PastTyper(BaseException):
    """An interrupt on its way past typer, which ends a KeyboardInterrupt as a silent exit 130
    (typer 0.29 typer/core.py `_main`)."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__()
        self.interrupt = interrupt


def typer_app(app: Any, prog_name: str) -> Callable[[], int | None]:
    """`entry_point`'s `main` for a typer app: each of its commands lets an interrupt through to `entry_point`."""
    for command in app.registered_commands:
        command.callback = _past_typer(command.callback)
    return lambda: app(prog_name=prog_name)


def _past_typer(command: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(command)  # typer reads the command's signature through it
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as stop:
            raise _PastTyper(stop) from None

    return run


def entry_point(main: Callable[[], int | None], interrupted: str | Callable[[], str]) -> NoReturn:
    """The whole command: handlers installed before `main` loads its libraries; an interrupt is the line
    `interrupted` (or what it returns then) on stderr and 128 + its signal, through os._exit: after a
    KeyboardInterrupt CPython may send SIGINT again at exit (_Py_UnhandledKeyboardInterrupt, Modules/main.c).
    """
    install()
    try:
        code = main()
    except (KeyboardInterrupt, _PastTyper) as stopped:
        stop = stopped.interrupt if isinstance(stopped, _PastTyper) else stopped
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while the line is written changes nothing
        print(interrupted() if callable(interrupted) else interrupted, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code(stop))
    sys.exit(code)
