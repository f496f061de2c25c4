"""`python -m workbench.planner` as a user runs it: files written, exit codes and messages.

The commands run in-process through typer's runner (the CLI's own code path, without a Python start-up
and imports per run); the slow replay runs the real `python -m workbench.planner` process, and
test_gate_command.py runs it through `bin/plan` (exit codes 0, 1 and 2)."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner, Result

from config.loader import ENVIRONMENTS_DIR, load_config_file, load_environment
from workbench.planner.cli import app

ROOT = Path(__file__).resolve().parents[3]
PROD = YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "prod.yaml").read_text())


@pytest.fixture(autouse=True)
def _in_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # where a user runs it: relative paths in messages as they would see them


def planner(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args))
    # Anything but the CLI's own exit would be a traceback in a real run.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def planner_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench.planner", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def prod_with(tmp_path: Path, change) -> Path:
    raw = copy.deepcopy(PROD)
    change(raw)
    path = tmp_path / "prod.yaml"
    with path.open("w") as handle:
        YAML().dump(raw, handle)
    return path


def test_diff_shows_what_a_bigger_off_peak_floor_costs(tmp_path: Path) -> None:
    # The off-peak window's floor at the variant's maximum: more instances than target tracking keeps there.
    def off_peak_floor_at_the_max(raw: dict) -> None:
        primary = raw["autoscaling"]["primary"]
        window = next(w for w in primary["schedules"] if w["name"] == "tokyo-off-peak")
        window["min_capacity"] = window["max_capacity"] = primary["max_capacity"]

    base = prod_with(tmp_path, off_peak_floor_at_the_max)
    result = planner("diff", "prod", "--base", str(base), "--out", str(tmp_path / "diff.md"))
    assert result.exit_code == 0, result.stderr
    assert "head costs" in result.stdout and "/month less" in result.stdout
    assert (tmp_path / "diff.md").read_text() == result.stdout.rstrip("\n") + "\n"


def test_unknown_environment(tmp_path: Path) -> None:
    result = planner("plan", "qa", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "error: unknown environment 'qa'; known: dev, prod, staging" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_traffic_file_names_the_line(tmp_path: Path) -> None:
    csv = tmp_path / "week.csv"
    csv.write_text("timestamp,requests\n2026-10-29T00:00:00Z,500\n2026-10-29T00:01:00Z,-3\n")
    result = planner("plan", "prod", "--traffic", str(csv), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "line 3: requests must be a non-negative number, got '-3'" in result.stderr
    assert "Traceback" not in result.stderr


def test_instance_type_without_a_capacity_figure_gets_the_derived_one(tmp_path: Path) -> None:
    """Issue 52: a pool type the catalog knows has an assumed figure derived for the environment (objective,
    routing, engine), so the planner has one to plan with, and the plan says where it comes from."""

    def g5_2xlarge(raw: dict) -> None:
        for variant in raw["variants"]:
            variant["fallback_instance_types"] = ["ml.g5.2xlarge"]
        raw["endpoint_instance_quotas"]["ml.g5.2xlarge"] = 240

    cfg = load_config_file(prod_with(tmp_path, g5_2xlarge), "prod")
    figure = cfg.planning.capacity["ml.g5.2xlarge"]
    assert figure.measured is None and figure.concurrent_sequences == 16


def test_invalid_config_lists_its_problems(tmp_path: Path) -> None:
    def bad(raw: dict) -> None:
        raw["autoscaling"]["primary"]["schedules"][0]["timezone"] = "JST"
        raw["planning"] = {"provisioning_minutes": -1}

    result = planner("diff", "prod", "--base", str(prod_with(tmp_path, bad)))
    assert result.exit_code == 2
    assert "autoscaling.primary.schedules[0].timezone: 'JST' is an abbreviation, not a zone" in result.stderr
    assert "planning.provisioning_minutes: Input should be greater than or equal to 0, got -1" in result.stderr


@pytest.mark.slow  # an end-to-end run a cheaper test already covers: `make test-slow` (docs/explanation/testing.md)
def test_exported_reference_week_replays_to_the_same_plan(tmp_path: Path) -> None:
    week = tmp_path / "week.csv"
    assert planner_process("export-traffic", str(week)).returncode == 0
    result = planner_process("plan", "prod", "--traffic", str(week), "--out", str(tmp_path / "replayed"))
    assert result.returncode == 0, result.stderr  # the same minutes: the same plan, frontier included
    assert result.stdout.startswith("## Capacity plan: prod (week.csv)")
    reference = planner_process("plan", "prod", "--out", str(tmp_path / "reference"))
    assert reference.returncode == 0, reference.stderr

    def configured(output: str) -> str:
        return next(line for line in output.splitlines() if line.startswith("| Configured"))

    assert configured(result.stdout) == configured(reference.stdout)


def test_diff_verdict_names_what_breaks_the_budget(tmp_path: Path) -> None:
    """A target at 95 % of the concurrency an instance holds scales out too late: failed base → head vs the limit."""

    def high_target(raw: dict) -> None:
        raw["autoscaling"]["primary"]["target_tracking"]["target_share_of_concurrency"] = 0.95

    head = prod_with(tmp_path, high_target)
    result = planner("diff", "prod", "--base", str(ENVIRONMENTS_DIR / "prod.yaml"), "--head", str(head))
    assert result.exit_code == 0, result.stderr
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("**Verdict:**"))
    assert "; head breaks its budget: " in verdict
    assert "failed requests in the worst hour 0 % of the worst hour → " in verdict
    assert " against 1 %" in verdict


def test_unavailable_type_states_the_scenario_and_the_fallback(tmp_path: Path) -> None:
    result = planner(
        "plan", "prod", "--unavailable", "ml.g5.xlarge@friday-chapters,ml.g5.xlarge@2026-11-02T08:00Z/2026-11-02T09:00Z",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr  # the verdict decides, as without the option
    assert (
        "Scenario (--unavailable): no new ml.g5.xlarge Fri 2026-10-30 09:00–13:00 UTC (friday-chapters); "
        "no new ml.g5.xlarge Mon 2026-11-02 08:00–09:00 UTC (2026-11-02T08:00Z/2026-11-02T09:00Z); "
        "instances in service stay; pools in priority order: primary: ml.g5.xlarge → ml.g6.xlarge;"
    ) in result.stdout
    assert "Traceback" not in result.stderr


def test_unavailable_bad_values_exit_2_naming_the_value_and_what_is_allowed(tmp_path: Path) -> None:
    for value, message in (
        ("ml.g5.xlarge", "--unavailable 'ml.g5.xlarge': expected TYPE@WINDOW"),
        ("ml.p4d.24xlarge@friday-chapters", "is not an instance type of this environment's variants; allowed: "
         "ml.g5.xlarge, ml.g6.xlarge"),
        ("ml.g5.xlarge@saturday-chapters", "friday-chapters, shonen-jump, shonen-magazine) or an ISO interval"),
        ("ml.g5.xlarge@2026-10-30T07:00/2026-10-30T13:00Z", "'2026-10-30T07:00' is not an ISO 8601 time with an "
         "offset or Z"),
        ("ml.g5.xlarge@2027-01-01T00:00Z/2027-01-02T00:00Z", "the interval lies outside the traffic"),
    ):  # fmt: skip
        result = planner("plan", "prod", "--unavailable", value, "--out", str(tmp_path))
        assert result.exit_code == 2, (value, result.stderr)
        assert message in result.stderr, (value, result.stderr)
        assert "Traceback" not in result.stderr


def two_hours(tmp_path: Path) -> Path:
    """The reference week's first two hours, halved: a supplied file of other traffic than planning.traffic."""
    week = tmp_path / "week.csv"
    assert planner("export-traffic", str(week)).exit_code == 0
    header, *rows = week.read_text().splitlines()
    week.write_text("\n".join([header, *(f"{ts},{float(n) / 2:g}" for ts, n in (r.split(",") for r in rows[:120]))]))
    return week


def test_tune_refuses_to_write_a_frontier_found_on_supplied_traffic(tmp_path: Path) -> None:
    """planning.frontier judges plans of planning.traffic: written from two hours it would make every plan of
    prod's own week stale. Refused before the search; the file is not touched."""
    prod_file = ENVIRONMENTS_DIR / "prod.yaml"
    before = prod_file.read_bytes()
    week = two_hours(tmp_path)

    result = planner("plan", "prod", "--traffic", str(week), "--tune", "--write-config", "--out", str(tmp_path))

    assert result.exit_code == 2
    assert f"error: --write-config with --traffic {week}: planning.frontier judges the plans of prod's" in result.stderr
    assert "drop --write-config to see its frontier" in result.stderr
    assert prod_file.read_bytes() == before
    assert not (tmp_path / "tune.md").exists()


def test_diff_on_supplied_traffic_fails_a_stale_base_and_leaves_a_fresh_head_unjudged(tmp_path: Path) -> None:
    """plan-diff judges each side as `make plan` does: base's capacity edited (an input of the search: its
    frontier is stale, the cost fails), head as shipped (its frontier applies to planning.traffic, not to
    the supplied file: not judged, met)."""

    shipped = load_environment("prod", against_deployed=False).planning.capacity  # the assumed figures

    def lower_capacity(raw: dict) -> None:
        raw["planning"]["capacity"] = {
            name: {
                **figure.model_dump(mode="json", exclude_none=True),
                "requests_per_minute": figure.requests_per_minute * 0.9,
            }
            for name, figure in shipped.items()
        }

    base = prod_with(tmp_path, lower_capacity)
    result = planner("diff", "prod", "--base", str(base), "--traffic", str(two_hours(tmp_path)))

    assert result.exit_code == 0, result.stderr
    assert "**Budget:** base not met (cost vs the frontier); head met (cost not judged: supplied traffic)." in (
        result.stdout.splitlines()
    )
    assert "head meets its budget, which base breaks" in result.stdout
