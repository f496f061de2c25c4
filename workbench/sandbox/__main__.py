"""`python -m workbench.sandbox` (workbench/sandbox/cli.py): Ctrl-C, SIGTERM and SIGHUP are one line and 128 + the
signal from the start, while its libraries (moto, boto3, httpx) still load (ops/operations/interrupts.py)."""

import sys

from ops.operations.interrupts import entry_point

INTERRUPTED = "sandbox: interrupted; the sandbox keeps what was done before"


def main() -> int:
    from workbench.sandbox.cli import main as run

    return run(sys.argv[1:])


if __name__ == "__main__":
    entry_point(main, INTERRUPTED)
