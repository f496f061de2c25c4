"""`python -m ops.pipeline.quiet_child MESSAGE -- COMMAND...`: runs COMMAND (`make synth`'s CDK CLI); Ctrl-C stops it and
everything under it (the CLI, the Python app, jsii's Node) without a traceback from any of them, prints MESSAGE as
one line and exits 130 (ops/operations/child_process.py says how). Stopped by its own parent instead (SIGTERM: `bin/ops
deploy` interrupted), it stops COMMAND the same way and says nothing: the interrupted program says it, once."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from ops.operations.child_process import ParentStopped, run_child


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") != 1 or len(argv) < 3:
        print("usage: python -m ops.pipeline.quiet_child MESSAGE -- COMMAND...", file=sys.stderr)
        return 2
    message, command = argv[0], argv[2:]
    try:
        return run_child(command, Path.cwd())
    except ParentStopped:
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(message, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
