"""A failed `make plan-diff` leaves no earlier plan-out/ENV-diff.md behind to be read as its result,
and its messages name the base as REVISION:FILE, not the temporary copy `git show` wrote."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.planner.cli import app

REPO = Path(__file__).resolve().parents[3]
INVALID = "max_num_seqs: -1"  # engine.max_num_seqs must be positive: one problem, named by field


def invalid_dev(text: str) -> str:
    assert "  max_num_seqs: " in text
    return (
        "\n".join(f"  {INVALID}" if line.startswith("  max_num_seqs: ") else line for line in text.splitlines()) + "\n"
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository whose HEAD~1 holds dev's real config and HEAD an invalid one; everything but
    config/ (a copy: its working tree has dev's real config) links to this checkout."""
    root = tmp_path_factory.mktemp("checkout")
    for entry in REPO.iterdir():
        if entry.name not in {".git", "config", "plan-out"}:
            (root / entry.name).symlink_to(entry)
    shutil.copytree(REPO / "config", root / "config", ignore=shutil.ignore_patterns("__pycache__"))
    dev = root / "config" / "environments" / "dev.yaml"
    git = ["git", "-C", str(root), "-c", "user.name=test", "-c", "user.email=test@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "config/environments/dev.yaml"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "valid"], check=True)
    real = dev.read_text()
    dev.write_text(invalid_dev(real))
    subprocess.run([*git, "commit", "-q", "-a", "-m", "invalid"], check=True)
    dev.write_text(real)
    return root


def make_plan_diff(root: Path, base: str) -> subprocess.CompletedProcess:
    stale = root / "plan-out" / "dev-diff.md"
    stale.parent.mkdir(exist_ok=True)
    stale.write_text("an earlier run's comparison\n")
    return subprocess.run(
        ["make", "--no-print-directory", "plan-diff", "ENV=dev", f"BASE={base}"],
        cwd=root, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_an_invalid_base_names_the_revision_and_leaves_no_diff(checkout: Path) -> None:
    result = make_plan_diff(checkout, "HEAD")

    assert result.returncode == 2
    assert "error: HEAD:config/environments/dev.yaml: 1 problem(s)" in result.stderr
    assert "engine.max_num_seqs" in result.stderr
    assert "tmp" not in result.stderr.replace(str(checkout), "")  # no temporary file named
    assert not (checkout / "plan-out" / "dev-diff.md").exists()
    assert sorted(p.name for p in (checkout / "plan-out").iterdir()) == []


def test_an_unknown_revision_says_so_and_leaves_no_diff(checkout: Path) -> None:
    result = make_plan_diff(checkout, "no-such-revision")

    assert result.returncode == 2
    assert "error: BASE=no-such-revision is not a git revision here (a branch, tag or commit" in result.stderr
    assert "fatal:" not in result.stderr  # git's own line is not shown
    assert not (checkout / "plan-out" / "dev-diff.md").exists()


def test_an_unknown_environment_is_named_not_blamed_on_base(checkout: Path) -> None:
    """Issue 53: `make plan-diff ENV=prdo` blamed BASE and showed git's raw `fatal:` line."""
    result = subprocess.run(
        ["make", "--no-print-directory", "plan-diff", "ENV=prdo", "BASE=HEAD"],
        cwd=checkout, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "error: unknown environment 'prdo'; known: dev, prod, staging" in result.stderr
    assert "BASE" not in result.stderr and "fatal:" not in result.stderr


def test_a_valid_base_writes_the_comparison(checkout: Path) -> None:
    result = make_plan_diff(checkout, "HEAD~1")

    assert result.returncode == 0, result.stderr
    written = (checkout / "plan-out" / "dev-diff.md").read_text()
    assert written.startswith("## Capacity plan change: dev") and "head costs the same" in written
    assert sorted(p.name for p in (checkout / "plan-out").iterdir()) == ["dev-diff.md"]


def test_the_planner_names_the_base_as_told_and_removes_its_earlier_output(tmp_path: Path) -> None:
    base = tmp_path / "copy.yaml"
    base.write_text(invalid_dev((REPO / "config" / "environments" / "dev.yaml").read_text()))
    out = tmp_path / "diff.md"
    out.write_text("an earlier run's comparison\n")

    result = CliRunner().invoke(
        app, ["diff", "dev", "--base", str(base), "--base-name", "main:config/environments/dev.yaml", "--out", str(out)]
    )

    assert result.exit_code == 2
    assert result.stderr.startswith("error: main:config/environments/dev.yaml: 1 problem(s)")
    assert str(base) not in result.stderr
    assert not out.exists()
