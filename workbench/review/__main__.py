"""`python -m workbench.review` (workbench/review/cli.py). Ctrl-C, SIGTERM and SIGHUP, while it loads or works, are one
line and 128 + the signal (ops/operations/interrupts.py); the synths it started are stopped by then (cli.py `_synthesise`)."""

from ops.operations.interrupts import entry_point


def main() -> int:
    from workbench.review.cli import main

    return main()


entry_point(main, "review: interrupted; nothing was written")
