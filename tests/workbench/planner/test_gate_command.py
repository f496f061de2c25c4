"""The command README and docs/explanation/capacity-model.md give CI to gate on, `bin/plan ENV`, exits with
the planner's own codes: 0 met, 1 not met, 2 usage or config error (`make plan` exits 2 for all
failures: GNU make's "Error N" is the only trace of the code)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from config.loader import load_environment
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.reference_week import reference_week
from workbench.planner.traffic import write_csv

REPO = Path(__file__).resolve().parents[3]
GATE = REPO / "bin" / "plan"


def gate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GATE), *args], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_not_met_exits_1_after_writing_its_files(tmp_path: Path) -> None:
    """Twice the reference week: prod's ceiling fails requests in the peak windows and the worst hour.
    (tests/workbench/planner/test_cli.py's in-process twin runs in `make test-slow`.)"""
    week = tmp_path / "week.csv"
    write_csv(reference_week(), week)  # what `python -m workbench.planner export-traffic` writes
    header, *rows = week.read_text().splitlines()
    week.write_text("\n".join([header, *(f"{ts},{float(n) * 2:g}" for ts, n in (r.split(",") for r in rows))]))

    result = gate("prod", "--traffic", str(week), "--out", str(tmp_path))

    assert result.returncode == 1, result.stderr
    assert "verdict: not met (prod, planning.budget): failed requests in peak windows " in result.stderr
    assert "failed requests in the worst hour " in result.stderr and "of the worst hour against 1 %" in result.stderr
    assert "Traceback" not in result.stderr
    assert "### Verdict: not met" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "plot.png").is_file()


def test_met_exits_0(tmp_path: Path) -> None:
    """dev on its own planning.traffic, as the tuner sized it (at its frontier), meets every figure; the
    summary and plot are written. (tests/workbench/planner/test_cli.py's in-process twin runs in `make test-slow`.)"""
    result = gate("dev", "--out", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("## Capacity plan: dev (reference week × 0.1)")
    assert "- Margin: holds down to " in result.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## Capacity plan: dev")
    assert "### Verdict: met" in summary
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_supplied_traffic_is_met_with_the_cost_not_judged(tmp_path: Path) -> None:
    """prod as shipped on two hours of its own counts (half the reference week's first two hours, like a
    `bin/ops traffic` export): planning.frontier was found on the reference week, so the cost is not judged
    and does not fail the verdict; the line says how to find this traffic's frontier without writing config."""
    cfg = load_environment("prod", against_deployed=False)
    week = tmp_path / "week.csv"
    write_csv(reference_week(), week)
    header, *rows = week.read_text().splitlines()
    week.write_text("\n".join([header, *(f"{ts},{float(n) / 2:g}" for ts, n in (r.split(",") for r in rows[:120]))]))

    result = gate("prod", "--traffic", str(week), "--out", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert "not met" not in result.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "### Verdict: met (cost not judged: supplied traffic)" in summary
    assert (
        f"- Cost vs the frontier: not judged: planning.frontier was found on prod's planning.traffic"
        f" ({traffic_of(cfg).name}) and this plan replays week.csv; `bin/plan prod --traffic {week} --tune` finds"
        " this traffic's frontier without writing config."
    ) in summary.splitlines()
    assert "planning.frontier is stale" not in summary


def test_unknown_environment_exits_2() -> None:
    result = gate("qa")

    assert result.returncode == 2
    assert result.stderr.strip().endswith("error: unknown environment 'qa'; known: dev, prod, staging")


def test_a_bad_option_exits_2() -> None:
    result = gate("prod", "--no-such-option")

    assert result.returncode == 2
    assert "No such option: --no-such-option" in result.stderr


def test_a_failed_plan_leaves_no_earlier_files_to_be_taken_for_its_own(tmp_path: Path) -> None:
    (tmp_path / "summary.md").write_text("### Verdict: met\n")  # an earlier run's
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    bad = tmp_path / "week.csv"
    bad.write_text("timestamp,requests\n2026-10-29T00:00:00Z,-3\n")

    result = gate("prod", "--traffic", str(bad), "--out", str(tmp_path))

    assert result.returncode == 2
    assert "line 2: requests must be a non-negative number, got '-3'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["week.csv"]
