#!/usr/bin/env python3
"""jsii's Node.js, in a session of its own: `JSII_NODE` names this file (the Makefile; ops/pipeline/toolchain.py).

jsii starts Node in the importing Python's process group (jsii/_kernel/providers/process.py), so a terminal's
Ctrl-C killed it with tracebacks; here (setsid(2)) the Python that started it handles Ctrl-C and stops it.
Python, not `setsid node`: setsid is util-linux's, not macOS's.
"""

import contextlib
import os
import sys


def main() -> None:
    with contextlib.suppress(PermissionError):  # already a group leader: its caller gave it a group of its own
        os.setsid()
    os.execvp("node", ["node", *sys.argv[1:]])


if __name__ == "__main__":
    main()
