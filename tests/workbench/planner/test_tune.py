"""`bin/plan ENV --tune`: deterministic, the chosen point meets the budget and is the cheapest found that
does, and --write-config writes it through config/editor.py with the file's comments kept."""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from config.loader import environment_file, load_catalog, load_config_file, load_environment
from workbench.planner import tune, tune_report
from workbench.planner.environment_traffic import traffic_of
from workbench.planner.frontier import inputs_digest

DEV = load_environment("dev", against_deployed=False)


@pytest.fixture(scope="module")
def searched():
    return tune.search(DEV, load_catalog(), traffic_of(DEV, None))


def test_the_search_is_deterministic(searched) -> None:
    again = tune.search(DEV, load_catalog(), traffic_of(DEV, None))
    assert again.chosen == searched.chosen
    assert [o.point for o in again.evaluated] == [o.point for o in searched.evaluated]


def test_the_chosen_point_is_the_cheapest_evaluated_that_meets_the_budget(searched) -> None:
    """Under the stress set (issue 52): the cheapest of the stress phase's points holding every scenario; the
    bare phase's cheapest meets the budget at the bare assumptions alone and costs less."""
    meeting = [o for o in searched.stressed if o.meets]
    assert searched.chosen.meets
    assert searched.chosen.monthly_cost_usd == min(o.monthly_cost_usd for o in meeting)
    assert searched.chosen in searched.frontier
    assert searched.bare.meets and searched.bare.monthly_cost_usd <= searched.chosen.monthly_cost_usd


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


def test_write_config_writes_the_tuners_maxima_and_both_costs(tmp_path: Path, monkeypatch) -> None:
    """Issue 52: the tuner sizes every window's maximum for its fallback night and judges that night, so the
    maximum it found is written, lower or higher than the file's; planning.frontier records the bare
    assumptions' cost too."""
    prod = load_environment("prod", against_deployed=False)
    copy = tmp_path / "prod.yaml"
    shutil.copy(environment_file("prod"), copy)
    monkeypatch.setattr(tune_report, "environment_file", lambda name: copy)
    configured = tune.configured_point(prod)
    names = [w.name for s in prod.autoscaling.values() for w in s.schedules]
    release, evening = names.index("tokyo-friday-release"), names.index("tokyo-evening-peak")
    windows = list(configured.windows)
    floor, release_max = windows[release]
    windows[release] = (floor, release_max - 2)
    evening_floor, evening_max = windows[evening]
    windows[evening] = (evening_floor, evening_max + 2)
    maxima = (prod.autoscaling["primary"].max_capacity, prod.autoscaling["canary"].max_capacity)
    point = replace(configured, windows=tuple(windows), maxima=maxima)
    bare = tune.Outcome(configured, 29_000.0, 0, 0, 0.0, True)
    tune_report.write_point(prod, tune.Outcome(point, 40_000.0, 0, 0, 0.0, True), "0123456789ab", bare)

    written = load_config_file(copy, "prod")
    by_name = {w.name: w for s in written.autoscaling.values() for w in s.schedules}
    assert by_name["tokyo-friday-release"].max_capacity == release_max - 2
    assert by_name["tokyo-evening-peak"].max_capacity == evening_max + 2
    assert written.autoscaling["primary"].max_capacity == maxima[0]
    assert (written.planning.frontier.monthly_cost_usd, written.planning.frontier.bare_monthly_cost_usd) == (
        40_000.0,
        29_000.0,
    )


def test_the_frontier_goes_stale_when_the_admission_deadline_is_set_or_changed() -> None:
    """The replay sheds by the admission deadline (workbench/planner/fleet.py): a deadline set in config changes the
    frontier's inputs; unset, it follows alarms.ttft_p95_ms, already among them (today's digests unchanged)."""
    prod = load_environment("prod", against_deployed=False)
    catalog, traffic = load_catalog(), traffic_of(prod, None)
    assert prod.container.admission_deadline_ms is None
    assert inputs_digest(prod, catalog, traffic) == prod.planning.frontier.inputs  # as tuned, before this input

    def with_deadline(ms: int):
        return prod.model_copy(update={"container": prod.container.model_copy(update={"admission_deadline_ms": ms})})

    digests = {inputs_digest(with_deadline(ms), catalog, traffic) for ms in (900, 1_500)}
    assert len(digests) == 2 and prod.planning.frontier.inputs not in digests
