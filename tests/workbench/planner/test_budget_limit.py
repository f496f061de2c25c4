"""alarms.monthly_budget_usd: the planner computes it, `bin/plan ENV --write-config` writes it, `bin/plan ENV`
fails while it is stale (synth only reads it: tests/stacks/test_alarm_routing.py). The commands run in-process
on a copy of dev.yaml (config.loader and the writer read the copy): the repository's files stay as they are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import config.loader
from config.loader import environment_file, load_catalog, load_config_file, load_environment
from workbench.planner import budget_limit as budget_module
from workbench.planner.budget_limit import budget_limit, planned_monthly_cost_usd
from workbench.planner.build import build_plan
from workbench.planner.cli import app
from workbench.planner.environment_traffic import traffic_for

ROOT = Path(__file__).resolve().parents[3]
FIGURE = "  monthly_budget_usd: "


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
def test_each_environments_figure_is_the_planners(env: str) -> None:
    """What `bin/plan ENV --write-config` left in the shipped files is still what the planner computes."""
    cfg = load_environment(env, against_deployed=False)
    limit = budget_limit(cfg, load_catalog())
    assert not limit.stale, limit.line()
    assert limit.expected == round(cfg.alarms.monthly_budget_usd)


def test_the_figure_is_the_plans_configured_cost_times_the_margin() -> None:
    cfg, catalog = load_environment("dev", against_deployed=False), load_catalog()
    plan = build_plan(cfg, catalog, traffic_for(cfg.planning.traffic))
    configured = plan.scenarios["configured"].total.monthly_cost_usd
    assert planned_monthly_cost_usd(cfg, catalog) == pytest.approx(configured, rel=1e-9)
    assert budget_limit(cfg, catalog).expected == round(configured * cfg.alarms.budget_margin)


@pytest.fixture
def dev_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "dev.yaml"  # named for the environment: the writer validates it as dev
    shutil.copy(environment_file("dev"), copy)
    monkeypatch.setattr(config.loader, "environment_file", lambda name: copy)
    monkeypatch.setattr(budget_module, "environment_file", lambda name: copy)
    monkeypatch.chdir(ROOT)
    return copy


def with_figure(path: Path, value: int) -> None:
    lines = path.read_text().splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if line.startswith(FIGURE)]
    lines[index] = f"{FIGURE}{value}\n"
    path.write_text("".join(lines))


def planner(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def test_a_stale_figure_fails_the_plan_naming_it(dev_copy: Path, tmp_path: Path) -> None:
    expected = budget_limit(load_config_file(dev_copy, "dev"), load_catalog()).expected
    with_figure(dev_copy, expected + 100)

    result = planner("plan", "dev", "--out", str(tmp_path / "out"))

    assert result.exit_code == 1, result.stderr
    line = (
        f"AWS Budgets limit: alarms.monthly_budget_usd is ${expected + 100:,}, expected ${expected:,} (the configured"
        " cost on planning.traffic ($"
    )
    assert f"verdict: not met (dev): {line}" in result.stderr
    assert "stale, run `bin/plan dev --write-config`: not met." in result.stderr
    assert "planning.budget" not in result.stderr  # the scaling itself meets its budget: only the figure fails
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Verdict: not met" in summary and f"- {line}" in summary


def test_a_figure_within_rounding_is_up_to_date(dev_copy: Path, tmp_path: Path) -> None:
    limit = budget_limit(load_config_file(dev_copy, "dev"), load_catalog())
    exact = limit.monthly_cost_usd * limit.margin
    text = dev_copy.read_text().replace(f"{FIGURE}{limit.expected}\n", f"{FIGURE}{exact:.4f}\n")
    dev_copy.write_text(text)

    result = planner("plan", "dev", "--out", str(tmp_path / "out"))

    assert result.exit_code == 0, result.stderr
    assert f"- AWS Budgets limit: alarms.monthly_budget_usd ${limit.expected:,} is the configured cost" in result.stdout


def test_write_config_writes_the_figure_and_keeps_the_rest(dev_copy: Path, tmp_path: Path) -> None:
    before = dev_copy.read_text()
    expected = budget_limit(load_config_file(dev_copy, "dev"), load_catalog()).expected
    with_figure(dev_copy, 1)

    result = planner("plan", "dev", "--write-config", "--out", str(tmp_path / "out"))

    assert result.exit_code == 0, result.stderr
    assert f"-{FIGURE}1\n+{FIGURE}{expected}\n" in result.stdout  # the diff, then the plan
    assert dev_copy.read_text() == before  # every other line, comments included, as it was
    assert "### Verdict: met" in (tmp_path / "out" / "summary.md").read_text()
    again = planner("plan", "dev", "--write-config", "--out", str(tmp_path / "out"))
    assert again.exit_code == 0 and f"alarms.monthly_budget_usd ${expected:,} is up to date" in again.stdout


def test_tune_write_config_writes_the_figure_after_the_point(dev_copy: Path, tmp_path: Path) -> None:
    with_figure(dev_copy, 1)

    result = planner("plan", "dev", "--tune", "--write-config", "--out", str(tmp_path / "out"))

    assert result.exit_code == 0, result.stderr
    written = load_config_file(dev_copy, "dev")
    assert not budget_limit(written, load_catalog()).stale  # the figure of the scaling just written
    assert result.stdout.index("wrote the chosen point") < result.stdout.index(f"-{FIGURE}1\n")
