"""The canary guard's TTFT verdict and `status`'s TTFT column, on per-request first-token times in moto."""

from __future__ import annotations

import json

import pytest

from ops.operations.guard import GuardPolicy, check_canary
from tests.ops.test_promote_and_deploy import set_variant
from tests.ops_world import spread
from workbench.sandbox.moto_fixes import nearest_rank


def test_nearest_rank():
    assert nearest_rank([float(i) for i in range(1, 101)], 95) == 95.0
    assert nearest_rank([3.0, 1.0, 2.0], 50) == 2.0
    assert nearest_rank([5.0], 99.9) == 5.0


@pytest.mark.parametrize("override", [[], ["--override", "INC-7"]], ids=["guarded", "override"])
def test_a_canary_much_slower_to_its_first_token_is_refused_with_both_figures(invocations, cli, override):
    primary, canary = spread(100, 300), spread(300, 700)
    invocations.first_tokens("primary", primary)
    invocations.first_tokens("canary", canary)
    refused = cli("shift", "prod", "--canary-weight", "25", *override)  # an override still refuses what it compares
    assert refused.exit_code == 4, refused.output
    canary_p95, primary_p95 = nearest_rank(canary, 95), nearest_rank(primary, 95)
    assert (
        f"canary time to first token p95 {canary_p95:.0f} ms is {canary_p95 - primary_p95:.0f} ms above the "
        f"primary's {primary_p95:.0f} ms" in refused.stderr
    )
    assert invocations.weights() == {"primary": 95.0, "canary": 5.0}


def test_within_the_margin_passes_and_the_flags_change_the_margin(invocations, cli):
    invocations.first_tokens("primary", spread(100, 300))
    invocations.first_tokens("canary", spread(100, 340))  # p95 about 30 ms higher: under 50 ms
    passed = cli("shift", "prod", "--canary-weight", "10")
    assert passed.exit_code == 0, passed.output
    assert "TTFT p95 canary" in passed.output and "primary" in passed.output
    strict = cli("shift", "prod", "--canary-weight", "15", "--min-ttft-increase-ms", "5", "--max-ttft-increase", "5")
    assert strict.exit_code == 4 and "canary time to first token p95" in strict.stderr


def test_too_few_streams_on_either_side_are_not_compared(invocations):
    invocations.first_tokens("primary", spread(100, 300))
    invocations.first_tokens("canary", spread(900, 1000, n=40))
    cloudwatch = invocations.client("cloudwatch")
    verdict = check_canary(cloudwatch, invocations.endpoint, "canary", "primary", GuardPolicy())
    assert verdict.healthy, verdict.problems
    not_compared = "TTFT not compared: canary 40 streams, primary 200 streams, 100 each needed in the last 5min"
    assert verdict.not_checked == (not_compared,)
    assert "TTFT" not in verdict.summary  # the summary is what ran
    required = check_canary(cloudwatch, invocations.endpoint, "canary", "primary", GuardPolicy(), require_latency=True)
    assert len(required.problems) == 1 and required.problems[0].startswith(not_compared)
    stricter = GuardPolicy(min_invocations=40)
    assert not check_canary(cloudwatch, invocations.endpoint, "canary", "primary", stricter).healthy


@pytest.mark.parametrize("streams", [772, 0], ids=["canary-only", "no-metric"])
def test_a_shift_with_nothing_to_compare_is_refused_with_the_counts(invocations, cli, streams):
    """Issue 30's case: the canary streamed 772 requests, the primary none (or its metrics stopped); or no metric."""
    if streams:
        invocations.first_tokens("canary", spread(400, 600, n=streams))

    refused = cli("shift", "prod", "--canary-weight", "15")

    assert refused.exit_code == 4, refused.output
    counts = f"TTFT not compared: canary {streams} streams, primary 0 streams, 100 each needed in the last 5min"
    assert f"✗ {counts}" in refused.output and f"error: shift stopped: {counts}" in refused.stderr
    assert "or skip the check with --override REASON (logged); no weight was changed" in refused.stderr
    assert "✓ guard passed" not in refused.output
    assert invocations.weights() == {"primary": 95.0, "canary": 5.0}


def test_an_override_with_a_reason_goes_on_without_the_comparison_and_logs_it(invocations, cli):
    invocations.first_tokens("canary", spread(400, 600, n=772))

    result = cli("shift", "prod", "--canary-weight", "15", "--override", "INC-7: primary's metrics are down")

    assert result.exit_code == 0, result.output
    assert invocations.weights() == {"primary": 85.0, "canary": 15.0}
    assert "enough streams to compare TTFT" in result.output and "! reason given: INC-7" in result.output
    assert "  ! not checked: TTFT not compared: canary 772 streams, primary 0 streams" in result.output
    entry = json.loads((cli.runtime.state_dir / "overrides.log").read_text().splitlines()[-1])
    assert entry["reason"] == "INC-7: primary's metrics are down"
    assert "enough streams to compare TTFT" in entry["skipped"]


def test_a_check_mark_only_for_checks_that_ran(prod, cli):
    """From 0 % nothing is required: margins with nothing to compare are named as not checked, never ticked."""
    prod.set_weights(primary=100, canary=0)
    prod.traffic("primary", invocations=1000, errors=0)

    result = cli("shift", "prod", "--canary-weight", "5", "--hold", "2min", "--check-every", "1min")

    assert result.exit_code == 0, result.output
    ticked = [line for line in result.output.splitlines() if line.startswith("  ✓") and "guard" in line]
    assert ticked == [
        "  ✓ guard passed (alarms: none firing)",
        "  ✓ hold, 60s left: guard passed (alarms: none firing)",
        "  ✓ hold, 0s left: guard passed (alarms: none firing)",
    ]
    assert "  ! not checked: 5XX margin: no canary invocations in the last 5min" in result.output
    assert "  ! hold, 0s left: not checked: TTFT not compared: canary 0 streams, primary 0 streams" in result.output


def test_promote_is_refused_by_a_slow_canary_too(environments, worlds, cli):
    set_variant(environments, "canary", image_tag="v0.2.0")
    world = worlds("prod")
    world.deploy()
    world.traffic("canary", invocations=1000, errors=0)
    world.traffic("primary", invocations=19000, errors=0)
    world.first_tokens("primary", spread(100, 300))
    world.first_tokens("canary", spread(600, 900))
    refused = cli("promote", "prod")
    assert refused.exit_code == 4, refused.output
    assert "promotion refused: canary time to first token p95" in refused.stderr


def test_status_shows_first_token_percentiles_per_variant(invocations, cli):
    values = [float(i) for i in range(1, 201)]
    invocations.first_tokens("primary", values)
    shown = cli("status", "prod")
    assert shown.exit_code == 0, shown.output
    primary_row = next(line for line in shown.output.splitlines() if line.strip().startswith("primary"))
    assert "100 ms / 190 ms (200 streams)" in primary_row
    canary_row = next(line for line in shown.output.splitlines() if line.strip().startswith("canary"))
    assert "- / - (0 streams)" in canary_row
