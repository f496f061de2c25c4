"""The documented day-two flow, end to end, through `python -m workbench.sandbox` (docs/reference/commands.md):
a moto server process seeded from prod's synthesised templates, the stand-in model server and the
runtime front, with the ops CLI talking HTTP to them as it would to AWS.

Flow: status, verify and a streamed smoke test of the canary; a guarded shift with holds (the canary
serves traffic during each hold); a shift refused by a canary alarm; rollback; the ramp again from
0 % to 100 %; promote; deploy (the sandbox's deploy of the promoted config); verify fails on the
weights the ramp left, `shift --to-config` returns them, verify passes.

Holds do not wait (the CLI's sleep is injected); everything else is real processes and real HTTP.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aws_cdk as cdk
import boto3
import pytest

from ops.operations.environment import load_environment_config
from stacks.environment import build_environment
from tests.ops_world import edit_environment
from workbench.sandbox.runtime import record_invocations

pytestmark = pytest.mark.slow  # a long end-to-end run: `make test-slow` (CI runs it)

REPO = Path(__file__).resolve().parents[3]
CDK_CONTEXT = json.loads((REPO / "cdk.json").read_text())["context"]


def synthesise(env_name: str, out: Path) -> Path:
    """The templates `make synth` writes, from the (test's copy of the) environment's config."""
    app = cdk.App(context={**CDK_CONTEXT, "env": env_name}, outdir=str(out))
    build_environment(app, load_environment_config(env_name))
    app.synth()
    return out


def sandbox(*args: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "workbench.sandbox", *args, "--state-dir", str(state_dir)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def running_sandbox(real_environments, tmp_path, monkeypatch):
    """prod as deployed with a canary on v0.2.0, in a sandbox process; its exports in this process."""
    edit_environment(real_environments, "prod", lambda doc: doc["variants"][1].update(image_tag="v0.2.0"))
    templates = synthesise("prod", tmp_path / "cdk.out")
    state_dir = tmp_path / "sandbox"
    started = sandbox("start", "prod", "--templates", str(templates), state_dir=state_dir)
    assert started.returncode == 0, started.stderr
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in started.stdout.splitlines() if line.startswith("export ")
    )
    for name, value in exports.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_CONFIG_FILE", raising=False)  # AWS_ENDPOINT_URL is all it takes
    yield exports, state_dir, tmp_path
    stopped = sandbox("stop", "prod", state_dir=state_dir)
    assert stopped.returncode == 0, stopped.stderr


def test_the_documented_day_two_flow_runs_against_the_sandbox(running_sandbox, cli):
    exports, state_dir, tmp_path = running_sandbox
    assert exports["MANGAASSIST_SANDBOX"] == "prod" and exports["MANGAASSIST_RUNTIME_HOOK"] == "workbench.sandbox.hook"
    session = boto3.Session(region_name=exports["AWS_REGION"])
    cloudwatch = session.client("cloudwatch")
    sagemaker = session.client("sagemaker")

    def weights() -> dict[str, float]:
        described = sagemaker.describe_endpoint(EndpointName="mangaassist-llm-prod")
        return {v["VariantName"]: v["CurrentWeight"] for v in described["ProductionVariants"]}

    def traffic(invocations: float, at: datetime) -> None:
        """A minute of traffic split by the live weights, as the endpoint would serve it, at `at`."""
        share = weights()["canary"] / 100
        for variant, part in (("canary", share), ("primary", 1 - share)):
            record_invocations(cloudwatch, "mangaassist-llm-prod", variant, invocations * part, 0, at)

    def served(invocations: float = 280, streams: int = 100) -> None:
        """The same minute with 100 streams per serving variant really served (their TTFT reaches
        CloudWatch), as the documented `sandbox traffic` command leaves it: a step from above 0 %
        compares both variants' TTFT p95 over at least 100 streams each."""
        done = sandbox(
            "traffic", "prod", "--per-minute", str(invocations), "--streams", str(streams), state_dir=state_dir
        )
        assert done.returncode == 0, done.stderr

    # Look: the synthesised prod, ml.g5 and all, with its alarms and scaling.
    status = cli("status", "prod")
    assert status.exit_code == 0, status.output
    assert "ml.g5.xlarge" in status.output and "schedule tokyo-evening-peak-start" in status.output
    assert cli("verify", "prod").exit_code == 0

    smoke = cli("smoke", "prod", "--variant", "canary", "--max-tokens", "8")
    assert smoke.exit_code == 0, smoke.output
    assert "6 of 6 invocations answered as expected" in smoke.output

    # A guarded step with a hold; the canary serves traffic while it is held.
    # The streamed minute and the two before it: at 5 % the canary serves the 100 invocations a step needs, and
    # 25 % of the rate stays within what the canary serves (planning.capacity), so the first step needs no more
    # instances. The two earlier minutes are stamped from the clock read before the streams: each is a minute
    # of its own (the busiest minute sizes the canary), and both stay in the guard's 5-minute window for at
    # least two minutes after the streams began, however long they take (29 s on this machine at load 10).
    streams_began = datetime.now(UTC)
    served(invocations=500)
    for minutes_before in (2, 1):
        traffic(500, streams_began - timedelta(minutes=minutes_before))
    # During holds, a smaller minute: the fake holds take seconds, so several of these land in one real
    # minute, and the busiest of them is what a 100 % canary must carry (17 x 132/min at most: each call starts a
    # process, streams 80 requests and waits 2 s for CloudWatch, so no machine lands 17 in a minute). 40 streams a call still give the
    # guard its 100 per variant within its 5-minute window.
    cli.sleep.on_call = lambda call: served(120, 40)
    ramp = cli("shift", "prod", "--canary-weight", "25", "--hold", "30min", "--check-every", "10min")
    assert ramp.exit_code == 0, ramp.output
    assert weights() == {"primary": 75.0, "canary": 25.0}

    # A canary alarm refuses the next step; nothing changes.
    canary_alarms = [
        a["AlarmName"]
        for a in cloudwatch.describe_alarms()["MetricAlarms"]
        if a["AlarmDescription"].startswith("[page] canary: 5XX")
    ]
    cloudwatch.set_alarm_state(AlarmName=canary_alarms[0], StateValue="ALARM", StateReason="sandbox: 5XX spike")
    refused = cli("shift", "prod", "--canary-weight", "50")
    assert refused.exit_code == 4
    assert f"alarm {canary_alarms[0]} is in ALARM (sandbox: 5XX spike)" in refused.stderr
    assert weights() == {"primary": 75.0, "canary": 25.0}

    rollback = cli("rollback", "prod")
    assert rollback.exit_code == 0, rollback.output
    assert weights() == {"primary": 100.0, "canary": 0.0}

    # Fixed: the ramp again from 0 %, first step first, each further step on the evidence of a hold.
    cloudwatch.set_alarm_state(AlarmName=canary_alarms[0], StateValue="OK", StateReason="sandbox: fixed")
    again = cli(
        "shift", "prod", "--canary-weight", "100", "--step", "25", "--step", "50", "--step", "75",
        "--hold", "30min", "--check-every", "10min", "--raise-canary-capacity",
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "canary 0% → 25% → 50% → 75% → 100%" in again.output
    assert weights() == {"primary": 0.0, "canary": 100.0}

    promote = cli("promote", "prod")
    assert promote.exit_code == 0, promote.output
    assert "primary.image_tag: v0.1.0 → v0.2.0" in promote.output

    def deploy_into_sandbox(env_name: str, released: list[str]) -> int:
        templates = synthesise(env_name, tmp_path / "cdk.out.promoted")
        return sandbox("deploy", env_name, "--no-synth", "--templates", str(templates), state_dir=state_dir).returncode

    cli.runtime.deployer = deploy_into_sandbox
    deployed = cli("deploy", "prod")
    assert deployed.exit_code == 0, deployed.output

    after = cli("verify", "prod")
    assert after.exit_code == 3
    assert "primary image" in after.output and ":v0.2.0, config tag v0.2.0" in after.output
    assert "✗ canary has 100% of traffic, config 5% (after a ramp: `bin/ops shift prod --to-config`)" in (after.output)

    back = cli("shift", "prod", "--to-config")
    assert back.exit_code == 0, back.output
    final = cli("verify", "prod")
    assert final.exit_code == 0, final.output
    assert weights() == {"primary": 95.0, "canary": 5.0}

    # A second start hands out the same sandbox, and says what it keeps: the promoted endpoint config.
    reused = sandbox("start", "prod", "--templates", str(tmp_path / "cdk.out"), state_dir=state_dir)
    assert reused.returncode == 0, reused.stderr
    assert reused.stderr.startswith("sandbox: reusing the sandbox for prod running since ")
    live_config = sagemaker.describe_endpoint(EndpointName="mangaassist-llm-prod")["EndpointConfigName"]
    assert (
        f"primary ml.g5.xlarge/ml.g6.xlarge weight 95, canary ml.g5.xlarge/ml.g6.xlarge weight 5 (endpoint config {live_config})"
        in (reused.stderr)
    )
    assert "make sandbox-reset (or make sandbox FRESH=1)" in reused.stderr
    assert f"export AWS_ENDPOINT_URL={exports['AWS_ENDPOINT_URL']}" in reused.stdout

    fresh = sandbox("start", "prod", "--fresh", "--templates", str(tmp_path / "cdk.out"), state_dir=state_dir)
    assert fresh.returncode == 0, fresh.stderr
    assert "reusing" not in fresh.stderr and "stopped the sandbox for prod" in fresh.stderr
    assert all(line.startswith(("#", "export ", "unset ")) for line in fresh.stdout.splitlines()), fresh.stdout
    fresh_exports = dict(
        line.removeprefix("export ").split("=", 1) for line in fresh.stdout.splitlines() if line.startswith("export ")
    )
    # A reset listens where the old sandbox did (the variables already exported keep working), and starts
    # clean: the promoted image and the 100 % canary are gone, the config's 95/5 is back.
    assert fresh_exports["AWS_ENDPOINT_URL"] == exports["AWS_ENDPOINT_URL"]
    assert fresh_exports["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] == exports["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"]
    assert weights() == {"primary": 95.0, "canary": 5.0}
