"""Issue 42 item 5: with the default (conversation) workload, a 10-minute sweep of an engine serving about
twice what the config assumes ends with an answer. On a real endpoint: 60 s steps, the conversations'
warm-up (capacity.under_way: 23.5 s for capacity/workload.yaml, 106 s before sessions started under way),
`--max-minutes 10`, planning.capacity 274/min against an engine of ~550/min. Here the same run with its
time scales shortened (think times and answers ~20x shorter, steps 8 s, the budget the same 7 steps'
worth), against the stand-in engine whose capacity is known by construction (tests/workbench/loadtest/
capacity_harness.py). Before this change the search started at a tenth of the config's figure and each
step waited out the 106 s warm-up: three steps in ten minutes, a lower bound and exit 3."""

from __future__ import annotations

import pytest
from capacity_harness import start_engine

from workbench.loadtest import MeasureSettings, SettingsError, measure
from workbench.loadtest.conversations import ConversationWorkload, load_workload
from workbench.loadtest.sweep import SHORTEST_SEARCH
from workbench.loadtest.targets import UrlTarget

pytestmark = pytest.mark.slow  # a long end-to-end run: `make test-slow` (CI runs it)

SLOTS, TOKENS, TOKEN_INTERVAL, SLO_MS = 8, 25, 0.01, 150.0
# capacity/workload.yaml's conversations (turns mean 4.2, max 35; think log-normal sigma 0.7), think
# times 20x shorter (median 0.5 s), short turns and fixed 25-token answers for the stand-in.
SCALED = """\
adapters: {manga_domain_v3: 1, general_support_v2: 1, jp_style_v1: 1}
system_prompt_tokens: 40
user_turn_tokens: {min: 10, max: 20}
answer_tokens: {median: 25, sigma: 0, min: 25, max: 25}
conversation:
  turns: {distribution: geometric, mean: 4.2, max: 35}
  think_seconds: {median: 0.5, sigma: 0.7, min: 0.1, max: 6}
  context_budget_tokens: 3496
"""
STEP_SECONDS = 8.0


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> ConversationWorkload:
    path = tmp_path_factory.mktemp("workload") / "scaled.yaml"
    path.write_text(SCALED)
    loaded = load_workload(str(path))
    assert isinstance(loaded, ConversationWorkload)
    return loaded


# SLOTS over the time one request holds its slot: 25 tokens paced by the clock (capacity_harness.py), so this is
# the engine's ceiling however busy the machine; measured alone on a busy machine it came out up to 2x lower.
CEILING_RPM = SLOTS * 60 / (TOKENS * TOKEN_INTERVAL)


def test_ten_minutes_worth_of_budget_answers_from_the_config_s_figure(workload, tmp_path):
    url, engine = start_engine(tmp_path / "engine", SLOTS, TOKEN_INTERVAL)
    try:
        # The config assumes about half what the engine serves within the objective (274 against ~550).
        # The search is judged here, not the generator (workbench/benchmarks/capacity_generator.py): on this shared
        # 2-core machine its send lag reached 240-1,775 ms in a busy minute, hence the wide --max-send-lag-ms.
        planned = round(CEILING_RPM * 0.35)
        real_step = 60 + 23.5  # s: a real endpoint's step with the conversations' warm-up
        budget_minutes = 10 * (STEP_SECONDS + workload.warmup_seconds) / real_step
        settings = MeasureSettings(
            slo_ttft_ms=SLO_MS, step_seconds=STEP_SECONDS, max_minutes=budget_minutes, planned_rpm=planned,
            max_send_lag_ms=1000, out=tmp_path / "out",
        )  # fmt: skip
        measured = measure(UrlTarget(url), workload, settings, say=print)
    finally:
        engine.stop()
    steps = measured.record["steps"]
    assert measured.outcome.complete and measured.answer is not None, measured.outcome.stopped
    assert measured.outcome.stopped == "refined"
    assert steps[0]["offered_rpm"] == planned  # the search starts from the config's figure
    assert planned < measured.answer < CEILING_RPM and any(not s["held"] for s in steps)
    assert measured.record["settings"]["warmup_seconds"] == workload.warmup_seconds
    print(
        f"\nplanned {planned}/min, answer {measured.answer:.0f}/min in {len(steps)} steps, budget {budget_minutes:.2f} min"
    )


def test_a_budget_no_search_can_answer_in_is_refused_up_front_with_the_time_it_needs():
    settings = MeasureSettings(slo_ttft_ms=500, step_seconds=60, max_minutes=10, planned_rpm=274)
    with pytest.raises(SettingsError) as refused:
        settings.sweep_settings(106)  # the warm-up of steps that started with no session under way
    assert str(refused.value).startswith(
        f"--max-minutes 10 cannot give an answer: the shortest search that can ({SHORTEST_SEARCH} steps: a rate "
        "that holds, one 1.46x above it that breaks, two refinements to within 10 %) takes 4 x (106 s warm-up + 60 s) "
        "= 11.1 min"
    )
    assert "give --max-minutes 12 or more, 14 for an answer up to 2.1x above the first rate" in str(refused.value)
    quick = settings.sweep_settings(load_workload("conversations").warmup_seconds)  # the shipped workload's
    assert (quick.start_rpm, quick.lowest_rpm, quick.max_rpm) == (274, pytest.approx(27.4), 822)
