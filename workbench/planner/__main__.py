"""`python -m workbench.planner`: the planner's commands (workbench/planner/cli.py). Ctrl-C, SIGTERM and SIGHUP, while
they load or work, are one line and 128 + the signal (ops/operations/interrupts.py). What the line says holds wherever
the interrupt lands: the planner writes its files last and a config edit (--write-config) replaces the file whole
(config/editor.py), so nothing is left half-changed."""

from ops.operations.interrupts import entry_point, typer_app

INTERRUPTED = "planner: interrupted; nothing more was done (a config file is only ever replaced whole)"


def main() -> int | None:
    from workbench.planner.cli import app

    return typer_app(app, "planner")()


if __name__ == "__main__":
    entry_point(main, INTERRUPTED)
