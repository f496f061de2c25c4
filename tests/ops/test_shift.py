"""`shift`: the canary ramp with holds, and the guard that refuses and rolls the weight back."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from ops.traffic import plan_steps

RAMP = ("shift", "prod", "--canary-weight", "100", "--step", "25", "--step", "50", "--step", "75")


def test_ramp_5_to_100_with_holds_ends_with_all_traffic_on_the_canary(prod, cli):
    prod.traffic("canary", invocations=1000, errors=2)
    prod.traffic("primary", invocations=19000, errors=30)

    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m")

    assert result.exit_code == 0, result.output
    assert prod.weights() == {"primary": 0.0, "canary": 100.0}
    assert "canary 5% → 25% → 50% → 75% → 100%" in result.output
    steps = [line for line in result.output.splitlines() if line.startswith("step:")]
    assert steps == [
        "step: canary 5% → 25%",
        "step: canary 25% → 50%",
        "step: canary 50% → 75%",
        "step: canary 75% → 100%",
    ]
    assert cli.sleep.calls == [600.0] * 12  # 30 min per step, checked every 10 min, 4 steps
    assert "guard passed (5XX over 5min: canary 0.20%, primary 0.16%)" in result.output
    assert "shift complete: canary has 100% of traffic" in result.output


def test_weights_are_confirmed_by_describing_the_endpoint(prod, cli):
    result = cli("shift", "prod", "--canary-weight", "25")

    assert result.exit_code == 0, result.output
    assert "InService; weights primary 75→75, canary 25→25" in result.output
    assert prod.weights() == {"primary": 75.0, "canary": 25.0}


def test_alarm_already_firing_refuses_before_any_change(prod, cli):
    prod.alarm("mangaassist-prod-canary-5xx", "canary")

    result = cli(*RAMP)

    assert result.exit_code == 4
    assert "alarm mangaassist-prod-canary-5xx is in ALARM" in result.stderr
    assert "no weight was changed" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}


def test_alarm_firing_mid_hold_rolls_the_canary_back_to_where_it_started(prod, cli):
    def alarm_goes_off(call: int) -> None:
        if call == 4:  # the second step's first check: canary is at 50% by then
            prod.alarm("mangaassist-prod-canary-latency", "canary")

    cli.sleep.on_call = alarm_goes_off

    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m")

    assert result.exit_code == 4
    assert "hold, 20min left: alarm mangaassist-prod-canary-latency is in ALARM" in result.output
    assert "shift stopped at canary 50%" in result.stderr
    assert "canary weight rolled back to 5%" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}


def test_endpoint_wide_alarm_counts_but_a_primary_only_alarm_does_not(prod, cli):
    prod.alarm("primary-latency", "primary")
    assert cli("shift", "prod", "--canary-weight", "25").exit_code == 0

    prod.alarm("endpoint-5xx", variant=None)
    result = cli("shift", "prod", "--canary-weight", "50")

    assert result.exit_code == 4
    assert "alarm endpoint-5xx is in ALARM" in result.stderr


def test_canary_5xx_rate_over_the_margin_refuses(prod, cli):
    prod.traffic("canary", invocations=200, errors=6)  # 3%
    prod.traffic("primary", invocations=3800, errors=19)  # 0.5%

    result = cli("shift", "prod", "--canary-weight", "25", "--max-5xx-margin", "2")

    assert result.exit_code == 4
    assert "canary 5XX rate 3.00% exceeds the primary's 0.50% by 2.50 points (allowed 2)" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}


def test_canary_5xx_rate_within_the_margin_passes(prod, cli):
    prod.traffic("canary", invocations=200, errors=6)

    result = cli("shift", "prod", "--canary-weight", "25", "--max-5xx-margin", "5")

    assert result.exit_code == 0, result.output
    assert "canary 3.00%, primary no traffic" in result.output


def test_moving_traffic_away_from_the_canary_is_not_guarded(prod, cli):
    prod.set_weights(primary=50, canary=50)
    prod.alarm("mangaassist-prod-canary-5xx", "canary")

    result = cli("shift", "prod", "--canary-weight", "0", "--step", "25")

    assert result.exit_code == 0, result.output
    assert "canary 50% → 25% → 0%" in result.output
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}


def test_a_failing_step_rolls_back_and_reports_both(prod, cli):
    """moto applies every weight update; a before-call hook makes the third one fail as AWS can."""
    sagemaker = prod.client("sagemaker")
    updates = []

    def third_update_fails(**kwargs):
        updates.append(kwargs)
        if len(updates) == 3:
            raise ClientError(
                {"Error": {"Code": "ValidationException", "Message": "Cannot update in-progress endpoint"}},
                "UpdateEndpointWeightsAndCapacities",
            )

    sagemaker.meta.events.register("before-call.sagemaker.UpdateEndpointWeightsAndCapacities", third_update_fails)
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    result = cli(*RAMP)

    assert result.exit_code == 1
    assert "shift stopped at canary 50%: UpdateEndpointWeightsAndCapacities failed (ValidationException)" in (
        result.stderr
    )
    assert "canary weight rolled back to 5%" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}


def test_already_at_the_target_changes_nothing(prod, cli):
    result = cli("shift", "prod", "--canary-weight", "5")

    assert result.exit_code == 0
    assert "already has 5% of traffic: nothing to do" in result.output


def test_unknown_variant_is_a_usage_error(prod, cli):
    result = cli("shift", "prod", "--canary-weight", "25", "--canary", "canery")

    assert result.exit_code == 2
    assert "config/environments/prod.yaml has no variant 'canery' (it has: primary, canary)" in result.stderr


@pytest.mark.parametrize("bad", [["--canary-weight", "101"], ["--canary-weight", "20", "--hold", "ten minutes"]])
def test_bad_options_are_rejected_by_the_parser(prod, cli, bad):
    result = cli("shift", "prod", *bad)

    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_error_window_must_be_whole_minutes(prod, cli):
    result = cli("shift", "prod", "--canary-weight", "20", "--error-window", "90s")

    assert result.exit_code == 2
    assert "whole minutes" in result.output


@pytest.mark.parametrize(
    ("start", "target", "steps", "route"),
    [
        (5, 100, [25, 50, 75], [25, 50, 75, 100]),
        (5, 100, [75, 25, 50, 25], [25, 50, 75, 100]),  # any order, duplicates once
        (30, 100, [5, 25, 50, 75], [50, 75, 100]),  # steps already passed are skipped
        (75, 0, [25, 50], [50, 25, 0]),  # downwards
        (5, 25, [], [25]),
    ],
)
def test_plan_steps(start, target, steps, route):
    assert plan_steps(start, target, steps) == route
