"""No ops command starts Node.js: loading a config (its region check included) never imports
aws_cdk, whose import starts jsii's Node process (~0.75 s of every command before issue 30, and a
Node traceback on Ctrl-C)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Every environment's config loaded and checked, every ops command module imported (ops.commands.cli
# registers them all), then `status prod` run until it stops for lack of credentials, which it checks
# after loading and checking prod's config.
PROBE = """
import json, runpy, sys
from config import known_environments, load_environment
from config.checks import known_regions
for env in known_environments():
    load_environment(env, against_deployed=False)
import ops.commands.cli
sys.argv = ["ops", "status", "prod"]
try:
    runpy.run_module("ops", run_name="__main__")
except SystemExit as stop:
    code = stop.code
print(json.dumps({
    "code": code,
    "regions_checked": known_regions.cache_info().currsize,
    "node_modules": sorted(m for m in sys.modules if m.split(".")[0] in ("jsii", "aws_cdk", "constructs")),
}))
"""


def test_loading_configs_and_running_an_ops_command_never_starts_node(tmp_path: Path) -> None:
    started = tmp_path / "node-started"
    fake_node = tmp_path / "node"
    fake_node.write_text(f"#!/bin/sh\ntouch {started}\nexit 97\n")
    fake_node.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MANGAASSIST_"))}
    env.update(
        JSII_NODE=str(fake_node),  # jsii would start this one (ops/pipeline/toolchain.py keeps a preset value)
        AWS_CONFIG_FILE="/dev/null",
        AWS_SHARED_CREDENTIALS_FILE="/dev/null",
        AWS_EC2_METADATA_DISABLED="true",
    )

    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 5, done.stderr  # no credentials: after prod's config was loaded and checked
    assert result["regions_checked"] == 1  # the region check ran (staging and prod name a region)
    assert result["node_modules"] == []
    assert not started.exists()
