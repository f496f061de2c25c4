"""`bin/ops traffic` on moto (issue 29 §3), and (`make test-slow`) through `make plan`. 18 hours, not days: moto's
GetMetricData cost grows with minutes asked x minutes stored (moto/cloudwatch/models.py).
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ops.operations.traffic_export
from ops.operations.errors import ExitCode
from ops.operations.traffic_export import MAX_DATAPOINTS, spans
from tests.ops_world import SAFE_NOW
from workbench.planner.cli import app as planner_app

FIRST = SAFE_NOW - timedelta(hours=18, minutes=10)  # the first minute with data, inside the last day
MINUTES = 18 * 60
GAP = range(300, 310)  # minutes with no datapoint from any variant


def put_invocations(world, first: datetime = FIRST, minutes: int = MINUTES) -> None:
    """primary 100-159 a minute, canary 5, both timestamped 20 s into the minute, as SageMaker's are."""
    cloudwatch = world.client("cloudwatch")
    data = []
    for minute in range(minutes):
        if minute in GAP:
            continue
        when = first + timedelta(minutes=minute, seconds=20)
        for variant, value in (("primary", 100 + minute % 60), ("canary", 5)):
            dimensions = [{"Name": "EndpointName", "Value": world.endpoint}, {"Name": "VariantName", "Value": variant}]
            data.append({"MetricName": "Invocations", "Dimensions": dimensions, "Value": value, "Timestamp": when})
    for start in range(0, len(data), 1000):  # PutMetricData takes at most 1,000 items
        cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=data[start : start + 1000])


def rows(path: Path) -> list[list[str]]:
    with path.open() as file:
        return list(csv.reader(file))


def expected(minute: int) -> float:
    return 0.0 if minute in GAP else float(100 + minute % 60 + 5)


def test_the_endpoints_minutes_become_the_planners_csv(prod, cli, tmp_path) -> None:
    put_invocations(prod)
    out = tmp_path / "prod-day.csv"
    result = cli("traffic", "prod", "--days", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    written = rows(out)
    assert written[0] == ["timestamp", "requests"]
    assert len(written) == 1 + MINUTES  # leading and trailing minutes without data left out
    assert written[1] == [FIRST.strftime("%Y-%m-%dT%H:%M:%SZ"), "105.0"]
    assert [float(r[1]) for r in written[1:]] == [expected(m) for m in range(MINUTES)]
    assert f"wrote {out}: {MINUTES:,} minutes of mangaassist-llm-prod (primary + canary)" in result.output
    assert "10 minutes inside the span had no datapoint: written as 0" in result.output
    assert f"next: make plan ENV=prod TRAFFIC={out}" in result.output


def test_a_span_read_in_pieces_gives_the_same_minutes(prod, cli, tmp_path, monkeypatch) -> None:
    """GetMetricData returns at most 100,800 datapoints a call: smaller pieces here, same answer."""
    put_invocations(prod)
    whole, pieces = tmp_path / "whole.csv", tmp_path / "pieces.csv"
    assert cli("traffic", "prod", "--days", "1", "--out", str(whole)).exit_code == 0
    monkeypatch.setattr(ops.operations.traffic_export, "MAX_DATAPOINTS", 2 * 500)  # 500 minutes x 2 variants a call: 3 calls
    assert cli("traffic", "prod", "--days", "1", "--out", str(pieces)).exit_code == 0
    assert rows(pieces) == rows(whole)


def test_spans_fit_one_call_each() -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    end = start + timedelta(days=14)
    for variants in (1, 2, 10):
        pieces = list(spans(start, end, variants))
        assert pieces[0][0] == start and pieces[-1][1] == end
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:], strict=False))
        assert all((e - s) / timedelta(minutes=1) * variants <= MAX_DATAPOINTS for s, e in pieces)
    assert len(list(spans(start, end, 10))) == 2  # 20,160 minutes x 10 variants = 201,600 datapoints


@pytest.mark.slow  # an end-to-end run a cheaper test already covers: `make test-slow` (docs/explanation/testing.md)
def test_the_csv_round_trips_through_make_plan(prod, cli, tmp_path) -> None:
    put_invocations(prod, SAFE_NOW - timedelta(days=3, minutes=10), 3 * 24 * 60)
    out = tmp_path / "prod-week.csv"
    assert cli("traffic", "prod", "--days", "7", "--out", str(out)).exit_code == 0
    plan_dir = tmp_path / "plan"
    result = CliRunner().invoke(planner_app, ["plan", "prod", "--traffic", str(out), "--out", str(plan_dir)])
    assert result.exit_code in (0, 1), result.output  # 1: the verdict is "not met", files still written
    summary = (plan_dir / "summary.md").read_text()
    assert summary.startswith("## Capacity plan: prod (prod-week.csv)")
    (traffic,) = [line for line in summary.splitlines() if line.startswith("- traffic: prod-week.csv")]
    # Three days from Saturday 2026-11-21 12:50 JST: the calendar's evenings and Monday's release.
    assert "tokyo evening" in traffic and "shonen-jump" in traffic
    assert traffic.endswith("(release_calendar, not the schedules)")


@pytest.mark.parametrize("days", ["0", "15"])
def test_a_span_cloudwatch_cannot_serve_by_the_minute_is_refused(cli, tmp_path, days) -> None:
    result = cli("traffic", "prod", "--days", days, "--out", str(tmp_path / "x.csv"))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.strip() == (
        f"error: --days {days}: CloudWatch keeps one-minute datapoints for 15 days (GetMetricData documentation) "
        "and rounds a start at that edge to 5 minutes, so 1 to 14 days"
    )


def test_no_traffic_is_not_found(prod, cli, tmp_path) -> None:
    out = tmp_path / "x.csv"
    result = cli("traffic", "prod", "--days", "2", "--out", str(out))
    assert result.exit_code == ExitCode.NOT_FOUND
    assert result.stderr.strip() == (
        "error: CloudWatch has no Invocations datapoint of endpoint mangaassist-llm-prod (variants primary, canary) "
        "from 2026-11-22T04:00Z to 2026-11-24T04:00Z; the planner needs at least 60 minutes (wrong region or "
        "account, or no traffic yet?)"
    )
    assert not out.exists()
