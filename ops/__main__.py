"""`python -m ops` (bin/ops): Ctrl-C, SIGTERM and SIGHUP handled once, here (ops/operations/interrupts.py)."""

from ops.operations import interrupts


def main() -> int | None:
    from ops.commands.cli import app

    return interrupts.typer_app(app, "ops")()


interrupts.entry_point(main, "error: interrupted; nothing was changed")
