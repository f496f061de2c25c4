"""`shift` before and after: its announced duration, `--dry-run`, and what an interrupt leaves and says."""

from __future__ import annotations

import shlex
import signal

from ops.operations.guard import GuardPolicy
from ops.operations.interrupts import Interrupted
from ops.operations.shift_plan import ShiftPlan, Target, resume_command, rollback_command
from tests.ops.test_shift import RAMP

INTERRUPTED = 130


def ctrl_c_at(cli, call: int) -> None:
    """Ctrl-C during the `call`-th pause of a hold (the CLI's sleep is where a ramp spends its time)."""

    def interrupt(number: int) -> None:
        if number == call:
            raise KeyboardInterrupt

    cli.sleep.on_call = interrupt


def test_ctrl_c_mid_ramp_says_where_the_weights_stand_and_how_to_go_on_or_back(evidence, cli):
    ctrl_c_at(cli, 4)  # the second step's first check: the canary is at 50 %

    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m", "--raise-canary-capacity")

    assert result.exit_code == INTERRUPTED, result.output
    assert evidence.weights() == {"primary": 50.0, "canary": 50.0}  # left where it was, not rolled back
    lines = result.stderr.splitlines()
    assert lines == [
        "error: interrupted: mangaassist-llm-prod (prod) stands at canary 50%, primary 50% (read back just now); "
        "nothing more was changed",
        "  resume:    bin/ops shift prod --canary-weight 100 --step 75 --hold 30min --check-every 10min "
        "--raise-canary-capacity",
        "  roll back: bin/ops rollback prod",
    ]
    assert "ENV" not in result.stderr and "Traceback" not in result.output


def test_the_printed_resume_command_finishes_the_ramp(evidence, cli):
    ctrl_c_at(cli, 2)
    reason = "INC-9: primary's metrics are down"
    options = ("--hold", "2min", "--max-5xx-margin", "2", "--error-window", "10min", "--override", reason)

    interrupted = cli(*RAMP, *options)

    assert interrupted.exit_code == INTERRUPTED
    resume = next(line for line in interrupted.stderr.splitlines() if "resume:" in line).split("resume:")[1].strip()
    assert resume == (
        "bin/ops shift prod --canary-weight 100 --step 50 --step 75 --hold 2min --max-5xx-margin 2 "
        "--error-window 10min --override 'INC-9: primary'\"'\"'s metrics are down'"
    )
    cli.sleep.on_call = lambda number: None
    resumed = cli(*shlex.split(resume)[1:])
    assert resumed.exit_code == 0, resumed.output
    assert "Shifting mangaassist-llm-prod: canary 25% → 50% → 75% → 100%" in resumed.output
    assert evidence.weights() == {"primary": 0.0, "canary": 100.0}


def test_ctrl_c_in_the_last_hold_has_nothing_left_to_resume(evidence, cli):
    ctrl_c_at(cli, 1)

    result = cli("shift", "prod", "--canary-weight", "25", "--hold", "10min")

    assert result.exit_code == INTERRUPTED
    assert "stands at canary 25%, primary 75%" in result.stderr
    assert "resume:    nothing left to shift, the hold after the last step was cut short" in result.stderr
    assert "roll back: bin/ops rollback prod" in result.stderr


def test_the_weights_are_read_back_not_assumed(evidence, cli):
    """Ctrl-C while the waiter confirms a step: SageMaker has the update, so the read-back shows it."""
    sagemaker = evidence.client("sagemaker")
    cli.runtime.client_overrides["sagemaker"] = sagemaker
    describes = []

    def interrupt_the_waiter(**kwargs):
        describes.append(kwargs)
        if (
            len(describes) == 4
        ):  # the shift's own read, the capacity check's, the busy check before the update, the waiter's first poll
            raise KeyboardInterrupt

    sagemaker.meta.events.register("before-call.sagemaker.DescribeEndpoint", interrupt_the_waiter)

    result = cli("shift", "prod", "--canary-weight", "25")

    assert result.exit_code == INTERRUPTED, result.output
    assert "stands at canary 25%, primary 75% (read back just now)" in result.stderr


def test_the_duration_is_said_before_the_shift_starts(evidence, cli):
    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m", "--raise-canary-capacity")

    lines = result.output.splitlines()
    assert lines[1] == (
        "  duration: at least 2h: 4 steps × 30min hold (the last hold watches the canary at 100%), plus the time "
        "SageMaker takes to put 4 weight changes into effect, and to launch any canary instances "
        "--raise-canary-capacity adds"
    )
    assert lines.index(lines[1]) < next(i for i, line in enumerate(lines) if line.startswith("step:"))
    without_holds = cli("shift", "prod", "--canary-weight", "0")
    assert "  duration: no hold, only the time SageMaker takes to put 1 weight change into effect" in (
        without_holds.output
    )


def test_dry_run_prints_the_plan_and_changes_nothing(evidence, cli):
    sagemaker = evidence.client("sagemaker")
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    def no_update(**kwargs):
        raise AssertionError("a dry run changed the weights")

    sagemaker.meta.events.register("before-call.sagemaker.UpdateEndpointWeightsAndCapacities", no_update)

    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m", "--dry-run")

    assert result.exit_code == 0, result.output
    assert evidence.weights() == {"primary": 95.0, "canary": 5.0}
    assert cli.sleep.calls == []
    assert "canary 5% → 25% → 50% → 75% → 100%" in result.output
    assert "duration: at least 2h: 4 steps × 30min hold" in result.output
    assert "dry run, nothing changed; the shift would, step by step:" in result.output
    assert (
        "  2. canary 25% → 50%, checked first: alarms; the 5XX and TTFT margins (where there is traffic to "
        "compare); evidence: 100 canary invocations in 5min; a TTFT comparison: 100 streams on each variant in "
        "5min; canary capacity for 50%; then hold 30min, checking alarms and both margins every 10min"
    ) in result.output
    assert "guard passed" not in result.output
    assert not [line for line in result.output.splitlines() if line.startswith("step:")]


def test_dry_run_says_what_an_override_and_a_shift_from_0_skip(evidence, cli):
    evidence.set_weights(primary=100, canary=0)

    result = cli("shift", "prod", "--canary-weight", "50", "--override", "INC-1", "--dry-run")

    assert result.exit_code == 0, result.output
    margins = "checked first: alarms; the 5XX and TTFT margins (where there is traffic to compare)\n"
    assert f"  1. canary 0% → 5%, {margins}" in result.output  # no evidence from 0 %, no capacity (override)
    assert f"  2. canary 5% → 50%, {margins}" in result.output  # no evidence, no capacity (override)
    assert not (cli.runtime.state_dir / "overrides.log").exists()  # a dry run overrides nothing
    away = cli("shift", "prod", "--canary-weight", "0", "--dry-run")
    assert "already has 0% of traffic: nothing to do" in away.output


def test_resume_and_rollback_name_only_what_differs_from_the_defaults():
    target = Target("dev", "mangaassist-llm-dev", "blue", "green", "eu-west-1")
    plan = ShiftPlan(
        60,
        steps=(10, 20, 40),
        hold_seconds=45.5,
        check_seconds=45.5,
        policy=GuardPolicy(min_invocations=30, max_ttft_increase_percent=10),
    )
    assert resume_command(target, plan, 20) == (
        "bin/ops shift dev --canary-weight 60 --step 40 --hold 45.5s --max-ttft-increase 10 "
        "--min-canary-invocations 30 --canary blue --primary green --region eu-west-1"
    )
    assert resume_command(target, ShiftPlan(0, steps=(25, 50)), 75) == (
        "bin/ops shift dev --canary-weight 0 --step 50 --step 25 --canary blue --primary green --region eu-west-1"
    )
    assert rollback_command(target) == "bin/ops rollback dev --canary blue --primary green --region eu-west-1"
    assert rollback_command(Target("prod", "e", "canary", "primary")) == "bin/ops rollback prod"


def test_a_rollback_stopped_by_sigterm_says_where_it_stands_and_how_to_finish(evidence, cli):
    """SIGTERM while the waiter confirms canary 0 %: the weights read back, how to finish, exit 143."""
    sagemaker = evidence.client("sagemaker")
    evidence.set_weights(canary=25.0, primary=75.0)
    cli.runtime.client_overrides["sagemaker"] = sagemaker
    sent: list[str] = []
    sagemaker.meta.events.register(
        "before-call.sagemaker.UpdateEndpointWeightsAndCapacities", lambda **kwargs: sent.append("weights")
    )

    def interrupt_the_waiter(**kwargs):
        if sent and sent.pop():
            raise Interrupted(signal.SIGTERM)

    sagemaker.meta.events.register("before-call.sagemaker.DescribeEndpoint", interrupt_the_waiter)

    result = cli("rollback", "prod")

    assert result.exit_code == 143, result.output
    assert (
        "error: interrupted: the rollback of mangaassist-llm-prod (prod) did not finish; it stands at canary 0%, "
        "primary 100% (read back just now)\n  finish it: bin/ops rollback prod\n"
    ) in result.stderr


def test_any_other_command_stopped_by_sighup_says_so_and_exits_129(prod, cli):
    """restore-scaling, status and the rest: the one line every command gives, with SIGHUP's code."""
    sagemaker = prod.client("sagemaker")
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    def hang_up(**kwargs):
        raise Interrupted(signal.SIGHUP)

    sagemaker.meta.events.register("before-call.sagemaker.DescribeEndpoint", hang_up)

    result = cli("restore-scaling", "prod")

    assert result.exit_code == 129, result.output
    assert result.stderr == "error: interrupted; nothing more was changed (see `bin/ops status prod`)\n"
