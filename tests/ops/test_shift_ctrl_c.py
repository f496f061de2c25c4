"""`python -m ops shift` interrupted for real on a moto server during the first hold: SIGINT to its group, SIGTERM,
SIGHUP (130, 143, 129); one message with the weights and the two commands, no traceback from it or a child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer

from ops.operations.environment import load_environment_config
from tests.ops_world import World, spread
from tests.processes import start_foreground_job
from workbench.sandbox import moto_fixes

REPO = Path(__file__).resolve().parents[2]
RAMP = ["shift", "prod", "--canary-weight", "100", "--step", "25", "--step", "50", "--step", "75", "--hold", "30m"]


@pytest.fixture
def moto_server(monkeypatch: pytest.MonkeyPatch):
    """prod as its config says (ml.g5 and all, as the sandbox runs it) on a moto server in this process."""
    cfg = load_environment_config("prod")
    monkeypatch.setenv("MOTO_ACCOUNT_ID", cfg.account or "123456789012")
    monkeypatch.delenv("MANGAASSIST_RUNTIME_HOOK", raising=False)
    moto_fixes.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{host}:{port}")
    world = World(cfg, boto3.Session(region_name=cfg.region))
    world.deploy()
    world.traffic("canary", invocations=100, errors=0)  # the evidence a step from 5 % needs, 100/min in all
    world.traffic("primary", invocations=200, errors=0)  # 25 % of even three batches in one minute fits the canary
    world.first_tokens("canary", spread(100, 300))
    world.first_tokens("primary", spread(100, 300))
    yield world
    server.stop()


def ctrl_c(ops: subprocess.Popen) -> None:
    os.killpg(ops.pid, signal.SIGINT)  # as a terminal sends it: the whole foreground group


@pytest.mark.parametrize(
    ("interrupt", "code"),
    [
        (ctrl_c, 130),
        (lambda ops: ops.send_signal(signal.SIGTERM), 143),  # `kill`, a CI job cancelled: the process alone
        (lambda ops: ops.send_signal(signal.SIGHUP), 129),  # the terminal closed
    ],
    ids=["ctrl-c", "SIGTERM", "SIGHUP"],
)
def test_interrupted_during_a_hold_it_prints_the_way_on_and_back_and_no_traceback(moto_server, interrupt, code):
    ops = start_foreground_job(
        [sys.executable, "-m", "ops", *RAMP],
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(120, ops.kill)  # a hung CLI fails the test instead of hanging it
    watchdog.start()
    try:
        assert ops.stdout is not None
        output = []
        for line in ops.stdout:
            output.append(line)
            if "✓ canary at 25%, primary at 75%" in line:  # the first hold starts now: 30 minutes
                interrupt(ops)
                break
        rest, errors = ops.communicate(timeout=60)
    finally:
        watchdog.cancel()

    assert ops.returncode == code, "".join(output) + rest + errors
    assert errors.splitlines() == [
        "error: interrupted: mangaassist-llm-prod (prod) stands at canary 25%, primary 75% (read back just now); "
        "nothing more was changed",
        "  resume:    bin/ops shift prod --canary-weight 100 --step 50 --step 75 --hold 30min",
        "  roll back: bin/ops rollback prod",
    ]
    assert "Traceback" not in "".join(output) + rest
    assert moto_server.weights() == {"primary": 75.0, "canary": 25.0}
