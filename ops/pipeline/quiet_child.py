"""`python -m ops.pipeline.quiet_child MESSAGE -- COMMAND...`: runs COMMAND (`make synth`'s CDK CLI) and returns its
exit code. Ctrl-C, SIGTERM or SIGHUP stops it and everything under it (the CLI, the Python app, jsii's Node) without a
traceback from any of them (ops/operations/child_process.py says how), prints MESSAGE as one line and exits 128 + the
signal (ops/operations/interrupts.py). Stopped by its own parent (`bin/ops deploy` interrupted), the line goes to that parent's
relay, which shows nothing after its own interrupt: the interrupted program says it, once."""

from __future__ import annotations

import sys
from pathlib import Path

from ops.operations.child_process import run_child
from ops.operations.interrupts import entry_point

USAGE = "usage: python -m ops.pipeline.quiet_child MESSAGE -- COMMAND..."


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") != 1 or len(argv) < 3:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    message, command = argv[0], argv[2:]
    entry_point(lambda: run_child(command, Path.cwd()), message)


if __name__ == "__main__":
    main(sys.argv[1:])
