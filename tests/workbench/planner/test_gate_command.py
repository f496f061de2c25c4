"""The command README and docs/explanation/capacity-model.md give CI to gate on, `bin/plan ENV`, exits with
the planner's own codes: 0 met, 1 not met, 2 usage or config error (`make plan` exits 2 for all
failures: GNU make's "Error N" is the only trace of the code). One test runs the real `bin/plan` for each
code; the rest run the same CLI in-process (typer's runner: the exit code `bin/plan` execs with)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from config.loader import load_environment
from workbench.planner.cli import app
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.reference_week import reference_week
from workbench.planner.traffic import write_csv

REPO = Path(__file__).resolve().parents[3]
GATE = REPO / "bin" / "plan"


def gate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GATE), *args], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def planner(*args: str) -> Result:
    result = CliRunner().invoke(app, ["plan", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def reference_csv(path: Path, rows: slice, factor: float) -> Path:
    """The reference week (what `python -m workbench.planner export-traffic` writes), cut and scaled."""
    write_csv(reference_week(), path)
    header, *lines = path.read_text().splitlines()
    scaled = (f"{ts},{float(n) * factor:g}" for ts, n in (r.split(",") for r in lines[rows]))
    path.write_text("\n".join([header, *scaled]))
    return path


def test_bin_plan_exits_0_met_1_not_met_2_unknown_environment(tmp_path: Path) -> None:
    """dev on its own planning.traffic, as the tuner sized it (at its frontier), meets every figure; twice
    the reference week overwhelms prod's ceiling in the peak windows and the worst hour; either way the
    summary and plot are written."""
    met = gate("dev", "--out", str(tmp_path / "met"))
    assert met.returncode == 0, met.stderr
    assert met.stdout.startswith("## Capacity plan: dev (reference week × 0.1)")
    assert "- Margin: holds down to " in met.stdout
    summary = (tmp_path / "met" / "summary.md").read_text()
    assert summary.startswith("## Capacity plan: dev") and "### Verdict: met" in summary
    assert (tmp_path / "met" / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    week = reference_csv(tmp_path / "week.csv", slice(None), 2)
    not_met = gate("prod", "--traffic", str(week), "--out", str(tmp_path / "not-met"))
    assert not_met.returncode == 1, not_met.stderr
    assert "verdict: not met (prod, planning.budget): failed requests in peak windows " in not_met.stderr
    assert "failed requests in the worst hour " in not_met.stderr
    assert "of the worst hour against 1 %" in not_met.stderr
    assert "Traceback" not in not_met.stderr
    assert "### Verdict: not met" in (tmp_path / "not-met" / "summary.md").read_text()
    assert (tmp_path / "not-met" / "plot.png").is_file()

    unknown = gate("qa")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().endswith("error: unknown environment 'qa'; known: dev, prod, staging")


def test_supplied_traffic_is_met_with_the_cost_not_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prod as shipped on two hours of its own counts (half the reference week's first two hours, like a
    `bin/ops traffic` export): planning.frontier was found on the reference week, so the cost is not judged
    and does not fail the verdict; the line says how to find this traffic's frontier without writing config."""
    monkeypatch.chdir(REPO)
    cfg = load_environment("prod", against_deployed=False)
    week = reference_csv(tmp_path / "week.csv", slice(120), 0.5)

    result = planner("prod", "--traffic", str(week), "--out", str(tmp_path))

    assert result.exit_code == 0, result.stderr
    assert "not met" not in result.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "### Verdict: met (cost not judged: supplied traffic)" in summary
    assert (
        f"- Cost vs the frontier: not judged: planning.frontier was found on prod's planning.traffic"
        f" ({traffic_of(cfg).name}) and this plan replays week.csv; `bin/plan prod --traffic {week} --tune` finds"
        " this traffic's frontier without writing config."
    ) in summary.splitlines()
    assert "planning.frontier is stale" not in summary


def test_a_bad_option_exits_2() -> None:
    result = planner("prod", "--no-such-option")

    assert result.exit_code == 2
    assert "No such option: --no-such-option" in result.stderr


def test_a_failed_plan_leaves_no_earlier_files_to_be_taken_for_its_own(tmp_path: Path) -> None:
    (tmp_path / "summary.md").write_text("### Verdict: met\n")  # an earlier run's
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    bad = tmp_path / "week.csv"
    bad.write_text("timestamp,requests\n2026-10-29T00:00:00Z,-3\n")

    result = planner("prod", "--traffic", str(bad), "--out", str(tmp_path))

    assert result.exit_code == 2
    assert "line 2: requests must be a non-negative number, got '-3'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["week.csv"]
