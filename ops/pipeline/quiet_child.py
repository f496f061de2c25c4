"""`python -m ops.pipeline.quiet_child MESSAGE -- COMMAND...`: run COMMAND (`make synth`'s CDK CLI); interrupted,
stop it and everything under it quietly (ops/operations/child_process.py), print MESSAGE, exit 128 + the signal.
"""

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
