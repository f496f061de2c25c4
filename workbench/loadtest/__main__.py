"""`python -m workbench.loadtest` (bin/loadtest): the load test's command line (workbench/loadtest/cli.py). Ctrl-C,
SIGTERM and SIGHUP are handled once, here (ops/operations/interrupts.py); during a sweep the measurement stops at
once and writes what it measured (exit 130)."""

from ops.operations.interrupts import entry_point, typer_app

INTERRUPTED = "loadtest: interrupted; a sweep that had begun wrote its report so far"


def main() -> int | None:
    from workbench.loadtest.cli import app

    return typer_app(app, "loadtest")()


if __name__ == "__main__":
    entry_point(main, INTERRUPTED)
