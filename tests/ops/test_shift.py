"""`shift`: the canary ramp with holds, and the guard that refuses and rolls the weight back."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

from ops.operations.guard import GuardPolicy, check_canary
from ops.operations.traffic import plan_steps
from workbench.sandbox.runtime import record_invocations

RAMP = ("shift", "prod", "--canary-weight", "100", "--step", "25", "--step", "50", "--step", "75")


def test_ramp_5_to_100_with_holds_ends_with_all_traffic_on_the_canary(prod, cli):
    prod.traffic("canary", invocations=1000, errors=2)
    prod.traffic("primary", invocations=19000, errors=30)
    prod.streamed()

    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m", "--raise-canary-capacity")

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
    assert "duration: at least 2h: 4 steps × 30min hold (the last hold watches the canary at 100%)" in result.output
    assert (
        "  ✓ guard passed (alarms: none firing; evidence: 1000 canary invocations in 5min, "
        "100 needed; 5XX over 5min: canary 0.20%, primary 0.16%; TTFT p95 canary "
    ) in result.output
    assert "shift complete: canary has 100% of traffic" in result.output


def test_weights_are_confirmed_by_describing_the_endpoint(evidence, cli):
    prod = evidence
    result = cli("shift", "prod", "--canary-weight", "25")

    assert result.exit_code == 0, result.output
    assert "InService; weights primary 75→75, canary 25→25" in result.output
    assert prod.weights() == {"primary": 75.0, "canary": 25.0}


@pytest.mark.parametrize("override", [[], ["--override", "INC-42"]], ids=["guarded", "override"])
def test_alarm_already_firing_refuses_before_any_change_override_or_not(prod, cli, override):
    prod.alarm("mangaassist-prod-canary-5xx", "canary")

    result = cli(*RAMP, *override)

    assert result.exit_code == 4
    assert "alarm mangaassist-prod-canary-5xx is in ALARM" in result.stderr
    assert "no weight was changed" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}


def test_alarm_firing_mid_hold_rolls_the_canary_back_to_where_it_started(evidence, cli):
    prod = evidence

    def alarm_goes_off(call: int) -> None:
        if call == 4:  # the second step's first check: canary is at 50% by then
            prod.alarm("mangaassist-prod-canary-latency", "canary")

    cli.sleep.on_call = alarm_goes_off

    result = cli(*RAMP, "--hold", "30m", "--check-every", "10m", "--raise-canary-capacity")

    assert result.exit_code == 4
    assert "hold, 20min left: alarm mangaassist-prod-canary-latency is in ALARM" in result.output
    assert "shift stopped at canary 50%" in result.stderr
    assert "canary weight rolled back to 5%" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}


def test_endpoint_wide_alarm_counts_but_a_primary_only_alarm_does_not(evidence, cli):
    prod = evidence
    prod.alarm("primary-latency", "primary")
    assert cli("shift", "prod", "--canary-weight", "25").exit_code == 0

    prod.alarm("endpoint-5xx", variant=None)
    result = cli("shift", "prod", "--canary-weight", "50")

    assert result.exit_code == 4
    assert "alarm endpoint-5xx is in ALARM" in result.stderr


@pytest.mark.parametrize(
    ("primary", "margin", "code", "says"),
    [
        ((3800, 19), "2", 4, "canary 5XX rate 3.00% exceeds the primary's 0.50% by 2.50 points (allowed 2)"),
        ((0, 0), "5", 0, "canary 3.00%, primary no traffic"),
    ],
)
def test_the_canary_5xx_rate_against_the_margin(prod, cli, primary, margin, code, says):
    prod.traffic("canary", invocations=200, errors=6)  # 3%
    if primary[0]:
        prod.traffic("primary", invocations=primary[0], errors=primary[1])  # 0.5%
    prod.streamed()

    result = cli("shift", "prod", "--canary-weight", "25", "--max-5xx-margin", margin)

    assert result.exit_code == code, result.output
    assert says in result.output
    assert prod.weights() == ({"primary": 95.0, "canary": 5.0} if code else {"primary": 75.0, "canary": 25.0})


def test_moving_traffic_away_from_the_canary_is_not_guarded(prod, cli):
    prod.set_weights(primary=50, canary=50)
    prod.alarm("mangaassist-prod-canary-5xx", "canary")

    result = cli("shift", "prod", "--canary-weight", "0", "--step", "25")

    assert result.exit_code == 0, result.output
    assert "canary 50% → 25% → 0%" in result.output
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}


def test_a_failing_step_rolls_back_and_reports_both(evidence, cli):
    """The third weight update fails as AWS can (not "in-progress": that is waited out)."""
    prod = evidence
    sagemaker = prod.client("sagemaker")
    updates = []

    def third_update_fails(**kwargs):
        updates.append(kwargs)
        if len(updates) == 3:
            raise ClientError(
                {"Error": {"Code": "ValidationException", "Message": "The variant weights must add up"}},
                "UpdateEndpointWeightsAndCapacities",
            )

    sagemaker.meta.events.register("before-call.sagemaker.UpdateEndpointWeightsAndCapacities", third_update_fails)
    cli.runtime.client_overrides["sagemaker"] = sagemaker

    result = cli(*RAMP, "--override", "test: the capacity check is not what this test is about")

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


@pytest.mark.parametrize(
    ("start", "target", "steps", "route"),
    [
        (5, 100, [25, 50, 75], [25, 50, 75, 100]),
        (5, 100, [75, 25, 50, 25], [25, 50, 75, 100]),  # any order, duplicates once
        (30, 100, [30, 50, 75], [50, 75, 100]),  # a step at the start is where the shift already is
        (0, 100, [], [5, 100]),  # from 0 %: the first step (here the config's 5 %), never a jump
        (0, 100, [25, 50], [25, 50, 100]),
        (0, 3, [], [3]),
        (75, 0, [25, 50], [50, 25, 0]),  # downwards
        (5, 25, [], [25]),
    ],
)
def test_plan_steps(start, target, steps, route):
    assert plan_steps(start, target, steps, first_step=5) == route


def test_steps_outside_the_way_are_refused_not_dropped_before_any_change(evidence, cli):
    result = cli("shift", "prod", "--canary-weight", "50", "--step", "75", "--step", "25", "--step", "2")

    assert result.exit_code == 2
    assert "--step 2%, 75% is outside the way from 5% to 50%" in result.stderr
    assert evidence.weights() == {"primary": 95.0, "canary": 5.0}


def test_after_a_rollback_a_shift_to_100_starts_at_the_first_step_and_needs_evidence_to_go_on(prod, cli):
    """The 3 a.m. case: canary at 0 % has served nothing, so "no errors" is no evidence for 100 %."""
    prod.set_weights(primary=100, canary=0)

    result = cli("shift", "prod", "--canary-weight", "100")

    assert result.exit_code == 4
    assert "canary 0% → 5% → 100%" in result.output
    assert "step: canary 0% → 5%" in result.output
    assert "not enough evidence: the canary served 0 invocations in the last 5min, a step needs 100" in result.stderr
    assert "canary weight rolled back to 0%" in result.stderr
    assert prod.weights() == {"primary": 100.0, "canary": 0.0}


def test_evidence_minimum_is_configurable(prod, cli):
    prod.traffic("canary", invocations=60, errors=0)
    prod.streamed()

    refused = cli("shift", "prod", "--canary-weight", "25")
    assert refused.exit_code == 4
    assert "the canary served 60 invocations in the last 5min, a step needs 100" in refused.stderr

    allowed = cli("shift", "prod", "--canary-weight", "25", "--min-canary-invocations", "50")
    assert allowed.exit_code == 0, allowed.output
    assert prod.weights() == {"primary": 75.0, "canary": 25.0}


def canary_fleet(world) -> tuple[int, float, str]:
    """The canary as the config deploys it: its instances, what one serves (planning.capacity), its type."""
    canary = next(v for v in world.cfg.variants if v.name == "canary")
    each = world.cfg.planning.capacity[canary.instance_type].requests_per_minute
    return canary.initial_instance_count, each, canary.instance_type


def beyond_the_canary(world) -> tuple[float, int, float, str]:
    """More primary traffic, spread as the evidence is, so a step to 50 % needs exactly one canary instance more."""
    count, each, instance_type = canary_fleet(world)
    total = (2 * count + 1) * each
    assert total > 2500, "the canary's instances already serve more than the evidence's traffic at 100 %"
    world.traffic("primary", invocations=(total - 2500) * 5, errors=0, minutes=5)
    return total, count, each, instance_type


def test_a_canary_without_capacity_for_its_new_share_is_refused_with_what_to_do(evidence, cli):
    """50 % of the busiest minute is half an instance's worth more than the canary's instances serve."""
    total, count, each, _ = beyond_the_canary(evidence)

    result = cli("shift", "prod", "--canary-weight", "50")

    assert result.exit_code == 4
    assert (
        f"50% of the busiest minute's {total:,.0f} invocations (last 5min) is {total / 2:,.0f}/min, but {count} canary "
        f"instance(s) in service serve {count * each:,.0f}/min ({each:,.0f} each, planning.capacity): rerun with "
        f"--raise-canary-capacity (sets {count + 1} instances"
    ) in result.stderr
    assert evidence.weights() == {"primary": 95.0, "canary": 5.0}


def test_raise_canary_capacity_adds_instances_and_waits_before_the_step(evidence, cli):
    _, count, _, instance_type = beyond_the_canary(evidence)
    primary = next(v for v in evidence.cfg.variants if v.name == "primary").initial_instance_count
    raised_to = count + 1

    result = cli("shift", "prod", "--canary-weight", "50", "--raise-canary-capacity")

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    raised = lines.index(f"raising canary to {raised_to} × {instance_type} before the step")
    assert raised < lines.index("step: canary 5% → 50%")
    assert f"InService; instances primary {primary}→{primary}, canary {raised_to}→{raised_to}" in result.output
    described = evidence.client("sagemaker").describe_endpoint(EndpointName=evidence.endpoint)
    counts = {v["VariantName"]: v["CurrentInstanceCount"] for v in described["ProductionVariants"]}
    assert counts == {"primary": primary, "canary": raised_to}
    assert evidence.weights() == {"primary": 50.0, "canary": 50.0}


def test_raising_is_refused_beyond_the_canarys_autoscaling_maximum(evidence, cli):
    evidence.register_scaling("canary")  # max 8
    evidence.traffic("primary", invocations=60000, errors=0, minutes=5)  # 14 500/min in all: 100 % needs 13

    result = cli("shift", "prod", "--canary-weight", "100", "--raise-canary-capacity")

    assert result.exit_code == 4
    assert "the canary needs 13 instances but its autoscaling max_capacity is 8" in result.stderr


def test_an_override_says_what_it_skips_and_is_logged(prod, cli):
    result = cli("shift", "prod", "--canary-weight", "50", "--override", "INC-42: canary carries the hotfix")

    assert result.exit_code == 0, result.output
    assert (
        "! override: skipping the evidence checks (minimum canary invocations, enough streams to compare TTFT) and "
        "the capacity check; alarms, the 5XX margin and the TTFT margin (where there is enough to compare) still apply"
    ) in result.output
    assert "! reason given: INC-42: canary carries the hotfix" in result.output
    entry = json.loads((cli.runtime.state_dir / "overrides.log").read_text().splitlines()[-1])
    assert entry["reason"] == "INC-42: canary carries the hotfix"
    assert entry["endpoint"] == "mangaassist-llm-prod" and entry["canary_weight"] == 50
    assert prod.weights() == {"primary": 50.0, "canary": 50.0}


class NoAws:
    """Any AWS client the command would create: using it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"an AWS call ({name}) was made before the usage error was found")


@pytest.fixture
def no_aws(environments, cli):
    for service in ("sts", "sagemaker", "cloudwatch", "application-autoscaling", "cloudformation", "s3"):
        cli.runtime.client_overrides[service] = NoAws()
    return cli


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--hold", "30m", "--check-every", "0"], "--check-every must be longer than 0, got 0s"),
        (["--hold", "10m", "--check-every", "30min"], "--check-every 30min is longer than --hold 10min"),
        (["--canary", "canery"], "config/environments/prod.yaml has no variant 'canery' (it has: primary, canary)"),
        (["--canary-weight", "101"], "Invalid value for '--canary-weight': Input should be less than or equal to 100"),
        (["--hold", "ten minutes"], "'ten minutes' is not a duration like 90s, 10m, 30min or 1h30m"),
        (["--error-window", "90s"], "the error window must be whole minutes, got 90s"),
        (["--override", " "], "--override needs a reason"),
        (["--to-config"], "give either --canary-weight N or --to-config"),
    ],
)
def test_usage_errors_are_found_before_any_aws_call(no_aws, options, says):
    result = no_aws("shift", "prod", "--canary-weight", "25", *options)

    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output


def test_durations_read_what_the_cli_prints(evidence, cli):
    result = cli("shift", "prod", "--canary-weight", "25", "--hold", "30min", "--check-every", "2.5min")

    assert result.exit_code == 0, result.output
    assert "hold 30min after each step, checked every 2.5min" in result.output
    assert cli.sleep.calls == [150.0] * 12


@pytest.mark.parametrize("text", ["90s", "10min", "2.5min", "2h", "1h30m", "45", "30m"])
def test_every_printed_duration_parses_back(text):
    from ops.operations.output import parse_duration, seconds

    assert parse_duration(seconds(parse_duration(text))) == parse_duration(text)


def test_to_config_returns_the_weights_a_promotion_left_at_0_100(prod, cli):
    """Promote and deploy keep 0/100 (RetainAllVariantProperties); verify wants 95/5 and says how."""
    prod.set_weights(primary=0, canary=100)
    failed = cli("verify", "prod")
    assert failed.exit_code == 3
    assert "✗ canary has 100% of traffic, config 5% (after a ramp: `bin/ops shift prod --to-config`)" in (failed.output)

    result = cli("shift", "prod", "--to-config")

    assert result.exit_code == 0, result.output
    assert "Shifting mangaassist-llm-prod: canary 100% → 5%" in result.output
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}
    assert cli("verify", "prod").exit_code == 0


def test_the_capacity_guard_counts_the_busiest_minute_not_a_half_full_one(prod, cli):
    """The current minute half full: the window's average fits the canary, the busiest minute needs one more
    (issue 39 item 2)."""
    count, each, _ = canary_fleet(prod)
    busiest = math.floor(count * each / 0.9)  # the average (0.9 of it) fits the canary, the minute does not
    needed = math.ceil(busiest / each)
    assert needed > count
    cloudwatch = prod.client("cloudwatch")
    now = datetime.now(UTC)
    for back, share in ((4, 1.0), (3, 1.0), (2, 1.0), (1, 1.0), (0, 0.5)):
        at = now - timedelta(minutes=back)
        record_invocations(cloudwatch, prod.endpoint, "canary", 100 * share, 0, at)
        record_invocations(cloudwatch, prod.endpoint, "primary", (busiest - 100) * share, 0, at)
    prod.streamed()
    window = check_canary(cloudwatch, prod.endpoint, "canary", "primary", GuardPolicy())
    assert window.total_invocations / 5 <= count * each  # what the guard divided before: the canary was enough

    result = cli("shift", "prod", "--canary-weight", "100")

    assert result.exit_code == 4, result.output
    assert f"100% of the busiest minute's {busiest:,} invocations (last 5min) is {busiest:,}/min" in result.stderr
    assert f"rerun with --raise-canary-capacity (sets {needed} instances" in result.stderr
    assert prod.weights() == {"primary": 95.0, "canary": 5.0}
