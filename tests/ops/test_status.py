"""`status`: endpoint, variants, scaling with schedules in local time, alarms - and its error paths."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

import pytest

from ops.operations.status import describe_schedule


def test_status_shows_endpoint_variants_scaling_and_alarms(prod, cli):
    prod.register_scaling("primary")
    prod.alarm("canary-5xx", "canary")
    prod.alarm("primary-latency", "primary", state="OK")

    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    out = result.output
    assert "Endpoint mangaassist-llm-prod (ap-northeast-1): InService" in out
    assert f"endpoint config in service: {prod.config_names[-1]}" in out
    primary_row = next(line for line in out.splitlines() if line.strip().startswith("primary "))
    assert primary_row.split()[:5] == ["primary", "v0.1.0", "4/4", "95/95", "95%"]
    # deployed as the config says (World.deploy): InstancePools, the preferred type first
    assert "  primary  1         ml.g4dn.xlarge  4           preferred" in out
    assert "  primary  2         ml.g6.xlarge    0           fallback" in out
    assert max(len(line) for line in out.splitlines()) < 120
    assert "primary: min 2, max 8" in out
    assert "policy primary-invocations (TargetTrackingScaling): SageMakerVariantInvocationsPerInstance at 50" in out
    assert "cron(45 17 * * ? *) Asia/Tokyo, 17:45 there = 08:45 UTC here → min 6, max 8" in out
    assert "canary: not registered" in out
    assert "✗ canary-5xx" in out
    assert "primary-latency" not in out  # in OK, not ALARM


@pytest.mark.parametrize(
    ("args", "variables", "code", "says"),
    [
        (["qa"], {}, 2, "error: unknown environment 'qa'; known: dev, prod, staging"),
        (["prod"], {"MOTO_ACCOUNT_ID": "222222222222"}, 6,
         "endpoint mangaassist-llm-prod does not exist in ap-northeast-1: deploy it with `make deploy ENV=prod`"),
        (["prod"], {"MOTO_ACCOUNT_ID": "111111111111"}, 5,  # staging's account, asked about prod
         "credentials are for account 111111111111, but prod lives in 222222222222"),
        (["prod"], {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None}, 5,
         'error: no AWS credentials found: set AWS_PROFILE (then `aws sso login`) or AWS_ACCESS_KEY_ID and '
         'AWS_SECRET_ACCESS_KEY; to try the CLI without an AWS account, see docs/how-to/sandbox.md, "Try it without AWS"'),
        (["prod"], {"AWS_PROFILE": "oncall-prod"}, 5,
         "error: AWS profile 'oncall-prod' is not in your AWS config: fix AWS_PROFILE"),
        (["dev"], {"AWS_DEFAULT_REGION": None}, 2, "no AWS region: pass --region or set AWS_REGION"),
        (["prod", "--region", "us-east-1"], {}, 2, "contradicts the environment's region ap-northeast-1"),
    ],
    ids=["unknown-env", "no-endpoint", "wrong-account", "no-credentials", "no-profile", "no-region", "other-region"],
)  # fmt: skip
def test_status_refusals_are_one_line_and_their_exit_code(environments, moto, monkeypatch, cli, args, variables, code, says):
    for name, value in variables.items():
        monkeypatch.delenv(name) if value is None else monkeypatch.setenv(name, value)

    result = cli("status", *args)

    assert result.exit_code == code, result.output
    assert says in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr


def test_dev_takes_region_from_the_option(worlds, monkeypatch, cli):
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    worlds("dev", region="eu-west-1").deploy()

    result = cli("status", "dev", "--region", "eu-west-1")

    assert result.exit_code == 0, result.output
    assert "Endpoint mangaassist-llm-dev (eu-west-1): InService" in result.output


def test_region_contradicting_the_config_is_refused(environments, cli):
    result = cli("status", "prod", "--region", "us-east-1")

    assert result.exit_code == 2
    assert "contradicts the environment's region ap-northeast-1" in result.stderr


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            {"Schedule": "cron(45 17 * * ? *)", "Timezone": "Asia/Tokyo", "ScalableTargetAction": {"MinCapacity": 6}},
            "cron(45 17 * * ? *) Asia/Tokyo, 17:45 there = 08:45 UTC here → min 6",
        ),
        (
            {"Schedule": "at(2026-12-24T18:00:00)", "Timezone": "America/New_York"},
            "at(2026-12-24T18:00:00) America/New_York = 2026-12-24 23:00 UTC",
        ),
        ({"Schedule": "rate(1 hour)"}, "rate(1 hour) UTC"),
        ({"Schedule": "cron(0 9 * * ? *)", "Timezone": "Mars/Olympus"}, "cron(0 9 * * ? *) Mars/Olympus (unknown"),
    ],
)
def test_schedules_are_shown_on_the_operators_clock(action, expected):
    assert describe_schedule(action, UTC).startswith(expected)


def test_schedule_window_in_local_time():
    action = {
        "Schedule": "rate(1 day)",
        "StartTime": "2026-12-01T00:00:00+00:00",
        "EndTime": "2026-12-31T00:00:00+00:00",
    }

    text = describe_schedule(action, ZoneInfo("Asia/Tokyo"))

    assert text == "rate(1 day) UTC from 2026-12-01 09:00 JST until 2026-12-31 09:00 JST"


def test_status_shows_the_share_of_requests_the_admission_check_shed(prod, cli):
    """ShedRequests (the image's EMF) against SageMaker's Invocations, over the status window."""
    from datetime import datetime

    from container.serving import contract

    prod.traffic("primary", invocations=400, errors=0)
    prod.client("cloudwatch").put_metric_data(
        Namespace=contract.METRIC_NAMESPACE,
        MetricData=[
            {
                "MetricName": contract.METRIC_SHED_REQUESTS,
                "Dimensions": [
                    {"Name": contract.DIM_ENDPOINT, "Value": prod.endpoint},
                    {"Name": contract.DIM_VARIANT, "Value": "primary"},
                ],
                "Value": 10,
                "Unit": "Count",
                "Timestamp": datetime.now(UTC),
            }
        ],
    )

    out = cli("status", "prod").output

    assert "primary: shed (429, over capacity) 10 of 400 invocations (2.5 %) in 5 min" in out
    assert "canary: shed" not in out
    document = cli("status", "prod", "--json").output
    assert '"requests": 10.0' in document and '"invocations": 400.0' in document
