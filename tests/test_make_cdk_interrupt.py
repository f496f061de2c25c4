"""Ctrl-C in a make target that runs the CDK CLI (synth, diff, deploy, deploy-image, deploy-ci-access, bootstrap): one
line naming what was interrupted and what it leaves, exit 130, no traceback from the CLI, app.py or jsii's Node.

Every such recipe has the same shape (`$(QUIET) 'make TARGET: interrupted; ...' -- $(CDK) ...`, ops/pipeline/quiet_child.py),
which the first test checks for all of them; one real `make diff ENV=dev`, interrupted as a terminal does it while
app.py synthesises, shows the shape does what it says (a deploy cannot run here: it needs AWS)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.processes import MAKE_REPORT, TRACEBACK, alive, descendants, start_foreground_job

REPO = Path(__file__).resolve().parents[1]
MAKEFILE = (REPO / "Makefile").read_text()
PATIENCE_SECONDS = 120.0
# The recipe's one way to run the CDK CLI: its Ctrl-C line first, starting with the target's own name.
QUIET_CDK = re.compile(r"\$\(QUIET\) 'make (?P<target>[\w-]+): interrupted; (?P<leaves>[^']+)' -- \$\(CDK\) \w+ ")


def recipes(makefile: str) -> dict[str, list[str]]:
    """Each rule's recipe as logical lines: tab-indented lines under `target: ...`, backslash continuations joined."""
    found: dict[str, list[str]] = {}
    target = None
    for line in makefile.replace("\\\n", " ").splitlines():
        if rule := re.match(r"^([\w.-]+):(?![:=])", line):
            target = rule.group(1)
            found[target] = []
        elif line.startswith("\t") and target is not None:
            found[target].append(" ".join(line.split()))
        elif line.strip() and not line.startswith("#"):
            target = None
    return found


def message(target: str, env: str) -> str:
    """The line the target's recipe gives ops/pipeline/quiet_child.py, as make passes it (ENV expanded)."""
    line = next(line for line in recipes(MAKEFILE)[target] if "$(CDK)" in line)
    quoted = QUIET_CDK.search(line)
    return f"make {target}: interrupted; {quoted.group('leaves')}".replace("$(ENV)", env)


def test_every_recipe_that_runs_the_cdk_cli_runs_it_quietly_with_its_own_line() -> None:
    assert re.search(r"^QUIET := \$\(PY\) -m ops\.pipeline\.quiet_child$", MAKEFILE, re.MULTILINE)
    running_cdk = {
        target: [line for line in lines if "$(CDK)" in line or "/cdk " in line or "npx cdk" in line]
        for target, lines in recipes(MAKEFILE).items()
    }
    running_cdk = {target: lines for target, lines in running_cdk.items() if lines}
    assert {"synth", "diff", "deploy", "deploy-image", "deploy-ci-access", "bootstrap"} <= set(running_cdk)
    # make synth's step runs it as $(QUIET) does, and says what it leaves itself (tests/ops/pipeline/test_synth_step.py)
    assert running_cdk.pop("synth") == ["@$(SYNTH) cdk.out/all -- $(CDK) synth $(CDK_FLAGS) --quiet -c env=all $(RELEASED_FLAG)"]
    assert re.search(r"^SYNTH := \$\(PY\) -m ops\.pipeline\.synth$", MAKEFILE, re.MULTILINE)
    for target, lines in running_cdk.items():
        for line in lines:
            quiet = QUIET_CDK.search(line)
            assert quiet, f"make {target} runs the CDK CLI without $(QUIET): {line}"
            assert quiet.group("target") == target, line
            assert line.count("$(CDK)") == 1, line


def synthesising(pid: int) -> bool:
    """app.py runs under the CDK CLI and has started jsii's Node (jsii-runtime.js):
    the synth is under way."""
    apps = [child for child, command in descendants(pid).items() if "app.py" in command]
    return any("jsii" in command for app in apps for command in descendants(app).values())


def test_make_diff_interrupted_while_app_py_synthesises_is_its_line_and_130(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(  # no AWS at all: an interrupt that came too late would fail differently, never call AWS
        HOME=str(tmp_path),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )
    make = start_foreground_job(
        ["make", "--no-print-directory", "diff", "ENV=dev"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(make.pid, signal.SIGKILL))
    watchdog.start()
    try:
        while make.poll() is None and not synthesising(make.pid):
            time.sleep(0.05)
        assert make.poll() is None, f"ended before it could be interrupted: {make.communicate()}"
        under_make = descendants(make.pid)
        os.killpg(make.pid, signal.SIGINT)  # as a terminal's Ctrl-C: make, quiet_child (the CLI is in its own session)
        out, errors = make.communicate()
    finally:
        watchdog.cancel()
    # GNU make ends itself with the SIGINT it got once its recipe ended (130 in a shell); quiet_child exited 130
    assert make.returncode == -signal.SIGINT, out + errors
    said = [line for line in errors.splitlines() if line.strip() and not MAKE_REPORT.match(line)]
    assert said == [message("diff", "dev")], out + errors
    assert not TRACEBACK.search(out + errors), out + errors
    assert all_ended(under_make)  # the CLI, app.py and jsii's Node (which ends when app.py's pipe to it closes)


def all_ended(pids: dict[int, str]) -> bool:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
