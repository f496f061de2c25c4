"""`status` fits 120 columns with AWS's long lines, and `status --json` carries the same facts."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ops.operations.scaling import SCALABLE_DIMENSION, SERVICE_NAMESPACE, resource_id

ALARM = "MangaAssist-prod-Serving-Alarmsprimaryttftp95C48E4CEB-ABCDEFGHIJKL"
REASON = (  # as CloudWatch writes it
    "Threshold Crossed: 1 out of the last 1 datapoints [12.0 (25/11/26 04:00:00)] was greater than the "
    "threshold (5.0) (minimum 1 datapoint for OK -> ALARM transition)."
)


@pytest.fixture
def busy(prod):
    """prod with both variants scaled, a dated release-day schedule and a rollback alarm firing."""
    prod.register_scaling("primary")
    prod.register_scaling("canary")
    prod.client("application-autoscaling").put_scheduled_action(
        ServiceNamespace=SERVICE_NAMESPACE,
        ResourceId=resource_id(prod.endpoint, "primary"),
        ScalableDimension=SCALABLE_DIMENSION,
        ScheduledActionName="us-eastern-evening-peak-start",
        Schedule="cron(45 17 ? * MON,WED,FRI *)",
        Timezone="America/New_York",
        StartTime=datetime(2026, 11, 1, tzinfo=UTC),
        EndTime=datetime(2027, 3, 1, tzinfo=UTC),
        ScalableTargetAction={"MinCapacity": 10, "MaxCapacity": 12},
    )
    prod.alarm(ALARM, "primary")
    prod.client("cloudwatch").set_alarm_state(AlarmName=ALARM, StateValue="ALARM", StateReason=REASON)
    return prod


def test_every_line_fits_120_columns_and_nothing_is_lost(busy, cli):
    result = cli("status", "prod")

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 119, "\n".join(line for line in lines if len(line) > 119)
    alarm = result.output.split("\nAlarms in ALARM\n", 1)[1]
    assert alarm.startswith(f"  ✗ {ALARM}: Threshold Crossed:")
    assert " ".join(alarm.split()) == f"✗ {ALARM}: {REASON}"  # wrapped, every word kept
    schedule = next(i for i, line in enumerate(lines) if "schedule us-eastern-evening-peak-start:" in line)
    assert lines[schedule].startswith("    schedule ") and lines[schedule + 1].startswith("        ")
    assert "until 2027-03-01 00:00 UTC" in " ".join(lines[schedule : schedule + 3])


def test_json_carries_the_same_facts(busy, cli):
    result = cli("status", "prod", "--json")

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["environment"] == "prod"
    assert document["endpoint"] | {"last_modified": None} == {
        "name": "mangaassist-llm-prod",
        "region": "ap-northeast-1",
        "status": "InService",
        "config_in_service": busy.config_names[-1],
        "deploying_config": None,
        "failure_reason": None,
        "last_modified": None,
    }
    datetime.fromisoformat(document["endpoint"]["last_modified"])
    primary, canary = document["variants"]
    assert (primary["name"], primary["image_tag"], primary["instances"], primary["weight"]) == (
        "primary", "v0.1.0", {"in_service": 4, "desired": 4}, {"current": 95.0, "desired": 95.0},
    )  # fmt: skip
    assert primary["share_percent"] == 95 and canary["share_percent"] == 5
    assert primary["instances_by_type"] == [
        {"instance_type": "ml.g4dn.xlarge", "priority": 1, "in_service": 4},
        {"instance_type": "ml.g6.xlarge", "priority": 2, "in_service": 0},
    ]
    assert primary["instance_provision_timeout_seconds"] == 900
    assert primary["ttft_ms"] == {"p50": None, "p95": None, "streams": 0.0, "window_seconds": 300}
    scaling = document["autoscaling"]["primary"]
    assert (scaling["min"], scaling["max"], scaling["suspended"]) == (2, 8, [])
    dated = next(a for a in scaling["scheduled_actions"] if a["ScheduledActionName"] == "us-eastern-evening-peak-start")
    assert dated["EndTime"] == "2027-03-01T00:00:00+00:00"
    assert dated["ScalableTargetAction"] == {"MinCapacity": 10, "MaxCapacity": 12}
    moto_type = document["capacity"]["ml.g4dn.xlarge"]
    assert moto_type["planning_capacity"]["requests_per_minute"] == 1200
    assert moto_type["physical_ceiling_per_minute"] > 0
    assert document["alarms_in_alarm"] == [{"name": ALARM, "reason": REASON, "variants": ["primary"]}]
