"""`bin/plan ENV --tune`: deterministic, the chosen point meets the budget and is the cheapest found that
does, and --write-config writes it through config/editor.py with the file's comments kept."""

import shutil
from pathlib import Path

import pytest

from config.loader import environment_file, load_catalog, load_config_file, load_environment
from planner import tune, tune_report
from planner.environment_traffic import traffic_of
from planner.frontier import inputs_digest

DEV = load_environment("dev", against_deployed=False)


@pytest.fixture(scope="module")
def searched():
    return tune.search(DEV, load_catalog(), traffic_of(DEV, None))


def test_the_search_is_deterministic(searched) -> None:
    again = tune.search(DEV, load_catalog(), traffic_of(DEV, None))
    assert again.chosen == searched.chosen
    assert [o.point for o in again.evaluated] == [o.point for o in searched.evaluated]


def test_the_chosen_point_is_the_cheapest_evaluated_that_meets_the_budget(searched) -> None:
    meeting = [o for o in searched.evaluated if o.meets]
    assert searched.chosen.meets
    assert searched.chosen.monthly_cost_usd == min(o.monthly_cost_usd for o in meeting)
    assert searched.chosen in searched.frontier


def test_window_candidates_keep_the_maximum_rule() -> None:
    point = tune.Point(0.55, ((10, 12),), ())
    for candidate in tune._window_candidates(point, 0, forecast=20, ceiling=36):
        low, high = candidate.windows[0]
        assert high >= min(-(-12 * low // 10), 36) and low <= high <= 36


def test_a_start_that_would_cross_midnight_is_not_a_candidate() -> None:
    assert tune.shift_cron("cron(45 17 ? * FRI *)", 15) == "cron(0 18 ? * FRI *)"
    assert tune.shift_cron("cron(5 0 * * ? *)", -15) is None


def test_write_config_keeps_comments_and_validates(searched, tmp_path: Path, monkeypatch) -> None:
    copy = tmp_path / "dev.yaml"
    shutil.copy(environment_file("dev"), copy)
    monkeypatch.setattr(tune_report, "environment_file", lambda name: copy)
    before = copy.read_text()
    digest = inputs_digest(DEV, load_catalog(), traffic_of(DEV, None))
    tune_report.write_point(DEV, searched.chosen, digest)
    after = copy.read_text()
    comments = [line for line in before.splitlines() if line.lstrip().startswith("#")]
    assert all(line in after for line in comments)
    written = load_config_file(copy, "dev")
    assert written.planning.frontier.inputs == digest
    assert written.planning.frontier.monthly_cost_usd == pytest.approx(searched.chosen.monthly_cost_usd, abs=0.01)
