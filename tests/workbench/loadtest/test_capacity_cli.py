"""`bin/loadtest` as an operator meets it: refusals before any AWS call, Ctrl-C/SIGTERM that stops at
once and still writes what was measured, the measurement recorded in the config, a report where the
caller asked for it, and `bin/loadtest` saying where the load test went."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from capacity_harness import start_engine
from typer.testing import CliRunner

from config import load_catalog, load_config_file
from config.checks.capacity import measured_capacity_warnings
from config.scaling_target import tracking_target
from ops.commands.cli import app as ops_app
from workbench.loadtest.cli import app
from workbench.loadtest.record import record_measurement

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def no_aws(monkeypatch):
    """Any AWS call would fail with a connection error, not with the refusal under test."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["prod", "--variant", "canary"], "prod is production: the sweep drives canary past its objective on purpose"),
        (["--url", "http://127.0.0.1:9"], "--url needs --slo-ttft-ms"),
        (["staging"], "give --variant NAME"),
        ([], "give ENV --variant NAME (a deployed variant) or --url URL"),
        (["--url", "http://x", "--slo-ttft-ms", "500", "--write-config"], "--write-config records a deployed variant"),
        (["--url", "http://x", "--slo-ttft-ms", "500", "--workload", "capture"], "--workload capture reads a deployed"),
    ],
)
def test_refused_before_any_aws_call_with_exit_2(no_aws, args, says):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert says in result.output


def test_ops_capacity_says_where_the_load_test_went_with_the_same_arguments():
    args = ["staging", "--variant", "canary", "--out", "my dir/", "--help"]
    result = CliRunner().invoke(ops_app, ["capacity", *args])
    assert result.exit_code == 2
    assert result.stderr == "error: the load test moved: bin/loadtest staging --variant canary --out 'my dir/' --help\n"
    assert result.stdout == ""  # it runs nothing


def test_bin_loadtest_writes_a_relative_out_where_it_was_called(tmp_path, fixed_workload):
    """bin/loadtest runs in the caller's directory (PYTHONPATH finds the repository): --out mine/ lands
    there, not in the repository. Nothing listens at the URL: the first step breaks, and the report says so."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    (tmp_path / "ops").mkdir()  # a folder named like the product's package is not imported (python -P)
    run = subprocess.run(
        [REPO / "bin" / "loadtest", "--url", f"http://127.0.0.1:{closed}", "--slo-ttft-ms", "500", "--step-seconds",
         "1", "--max-minutes", "0.1", "--workload", str(fixed_workload), "--out", "mine"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 3, run.stdout + run.stderr  # no answer: exit 3, not make's 2
    assert "report in mine/" in run.stderr
    assert json.loads((tmp_path / "mine" / "capacity.json").read_text())["steps"][0]["held"] is False
    assert not (REPO / "mine").exists()


# For tests of how a run stops (SIGTERM, its time budget), not of what it measures: a generous objective and send-lag
# limit, so that a busy 2-core machine's figures do not end the sweep first ("send lag p99 51 ms > 50 ms" stopped
# the SIGTERM test after step 1, before its signal).
AS_BUSY_AS_IT_GETS = ("--max-send-lag-ms", "1000")


def test_sigterm_stops_at_once_and_writes_what_was_measured(tmp_path, fixed_workload):
    url, engine = start_engine(tmp_path / "engine", slots=64, token_interval=0.01)
    out = tmp_path / "out"
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "workbench.loadtest", "--url", url, "--slo-ttft-ms", "5000", "--step-seconds", "4",
             "--start-rpm", "600", "--max-rpm", "600000", "--workload", str(fixed_workload), "--out", str(out),
             *AS_BUSY_AS_IT_GETS],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        lines = []
        while not any(line.startswith("step 2:") for line in lines):  # step 1 measured, step 2 under way
            lines.append(process.stdout.readline())
            assert process.poll() is None, "".join(lines)
        time.sleep(0.5)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
        stopped_after = time.monotonic() - signalled
    finally:
        engine.stop()
    rest = process.stdout.read()
    assert code == 130, "".join(lines) + rest
    print(f"\nstopped {stopped_after:.2f} s after SIGTERM")
    record = json.loads((out / "capacity.json").read_text())
    assert record["stopped"] == "interrupted" and record["steps"][0]["held"] is True
    assert [step["result"] for step in record["steps"]] == ["held", "interrupted"]
    # Exact counts: step 1 measured, step 2 cut short (partial, never judged), as the last line says.
    assert (record["steps_measured"], record["steps_partial"]) == (1, 1)
    (last,) = [line for line in rest.splitlines() if line.startswith("interrupted:")]
    assert last.startswith("interrupted: 1 step(s) measured, 1 partial (interrupted, not judged); at least ")
    # The answer is what step 1 answered within the objective, not the 600/min it offered.
    answered = record["steps"][0]["answered_within_objective_rpm"]
    assert record["requests_per_minute_per_instance"] == answered and record["answer_step"] == 1
    assert answered == round(record["steps"][0]["answered_within_objective"] / 4 * 60, 2)  # 4 s steps
    assert f"at least {answered:,.0f} requests/min per instance" in last


RECORD = {
    "requests_per_minute_per_instance": 210.0,
    "concurrent_requests_per_instance_at_slo": 15.3,
    "measured_at": "2026-11-25T03:00:00+00:00",
    "slo": {"ttft_p95_ms": 500.0, "max_error_percent": 1.0},
    "target": {"kind": "sagemaker", "environment": "staging", "variant": "canary", "image_tag": "v0.2.0"},
}


def test_write_config_records_the_measurement_keeping_comments(tmp_path):
    config_file = tmp_path / "prod.yaml"
    shutil.copy(REPO / "config" / "environments" / "prod.yaml", config_file)
    before = config_file.read_text()
    # 12 sequences at the answer: fewer than the 16 the objective allows either type by assumption (issue 52)
    record = {**RECORD, "concurrent_requests_per_instance_at_slo": 11.2}
    line = record_measurement(config_file, "ml.g5.xlarge", record, Path("capacity-out/x/capacity.json"))
    assert "210/min answered within the objective (TTFT p95 <= 500 ms), measured on staging/canary" in line
    after = config_file.read_text()
    comments = [text for text in before.splitlines() if text.strip().startswith("#")]
    assert all(comment in after for comment in comments)
    cfg = load_config_file(config_file, "prod")
    capacity = cfg.planning.capacity["ml.g5.xlarge"]
    assert capacity.requests_per_minute == 210 and capacity.concurrent_sequences == 12
    assert capacity.provenance() == (
        "measured: 210/min on staging/canary 2026-11-25, image v0.2.0 (answered within TTFT p95 <= 500 ms)"
    )
    # prod's target is a share of the measured concurrency, so the measurement moves it (the configured
    # share x 12; ml.g6.xlarge's assumed figure is larger, so ml.g5.xlarge now saturates first)...
    share = cfg.autoscaling["primary"].target_tracking.target_share_of_concurrency
    assert cfg.planning.capacity["ml.g6.xlarge"].concurrent_sequences > 12
    assert tracking_target(cfg, "primary") == pytest.approx(share * 12)
    unmeasured = load_config_file(REPO / "config" / "environments" / "prod.yaml", "prod")
    assert tracking_target(cfg, "primary") < tracking_target(unmeasured, "primary")
    # ... and prod deploys other images than the one measured: said.
    warnings = measured_capacity_warnings(cfg, load_catalog())
    assert any("was measured with image v0.2.0" in w and "re-measure" in w for w in warnings), warnings


def test_an_unmeasured_capacity_says_it_is_assumed():
    cfg = load_config_file(REPO / "config" / "environments" / "prod.yaml", "prod")
    assert cfg.planning.capacity["ml.g5.xlarge"].provenance() == "assumed: 123/min, never measured (`bin/loadtest`)"
    assert measured_capacity_warnings(cfg, load_catalog()) == []


def test_the_run_stops_by_itself_within_its_time_budget_and_json_puts_the_record_alone_on_stdout(
    tmp_path, fixed_workload
):
    """For scripts (--json): capacity.json's record is the only thing on stdout, progress and verdict on
    stderr. One run for both: the budget's end and the JSON output need the same sweep. The rates stay low
    (60/min rising x1.46 to at most ~270/min in the budget) so that a loaded 2-core machine still sends on
    schedule: from 300/min the fourth step offered ~930/min and a busy run ended "the generator fell behind"
    (send lag p99 > 50 ms) instead of on its time budget."""
    url, engine = start_engine(tmp_path / "engine", slots=64, token_interval=0.005)
    out = tmp_path / "out"
    started = time.monotonic()
    try:
        run = subprocess.run(
            [sys.executable, "-m", "workbench.loadtest", "--url", url, "--slo-ttft-ms", "5000", "--step-seconds", "2",
             "--start-rpm", "60", "--max-rpm", "100000", "--max-minutes", "0.15", "--workload", str(fixed_workload),
             "--out", str(out), "--json", *AS_BUSY_AS_IT_GETS],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        engine.stop()
    elapsed = time.monotonic() - started
    assert run.returncode == 3, run.stdout + run.stderr  # the time budget ends it without a finished search
    assert "at most 15,000 requests in all" in run.stderr  # 100,000/min for 0.15 min, said up front
    record = json.loads((out / "capacity.json").read_text())
    assert json.loads(run.stdout) == record
    assert record["stopped"].startswith("time budget") and not record["complete"]
    # 2 s steps in a 9 s budget: at most five begin (the fifth cut short); how many did depends on the
    # machine's load (one when busy).
    assert 1 <= len(record["steps"]) <= 5
    assert "lower bound" in run.stderr
    print(f"\nstopped after {elapsed:.1f} s (budget 9 s, plus start-up)")
