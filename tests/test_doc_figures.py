"""Figures in README.md and docs/ are the code's (issue 40 item 5): what `make docs` generates equals what the
generators render from the current config and records, and the walk's transcripts show the config's figures.
Cheap: config loading and text only (no synth, no planner run, no sandbox)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from config import load_environment
from tests.test_docs_commands import DOCUMENTS, ROOT, shell_commands
from tools import doc_figures, test_figures
from tools.docs_walk import transcript
from tools.docs_walk.steps import NOT_WALKED, RAMP_PER_MINUTE, STEPS


def test_every_rendered_figure_is_the_configs() -> None:
    assert doc_figures.differences() == []


def test_a_stale_figure_is_found_and_rewritten(tmp_path: Path) -> None:
    """The check can fail: a diagram line with another instance count is reported, and --write mends it."""
    rule = doc_figures.RULES[1]  # the README diagram's canary
    wanted = rule.render()
    count = int(re.search(r"(\d+) ×", wanted).group(1))
    stale = wanted.replace(f"{count} ×", f"{count + 1} ×")
    document = tmp_path / "README.md"
    document.write_text(f"before\n   {stale}\nafter\n")
    moved = doc_figures.Rule(rule.name, document, rule.pattern, rule.render)
    assert len(doc_figures.differences([moved])) == 1
    assert doc_figures.write([moved]) == [rule.name]
    assert doc_figures.differences([moved]) == [] and document.read_text() == f"before\n   {wanted}\nafter\n"


def test_the_diagram_shows_no_step_scaling_when_no_environment_has_it() -> None:
    configs = [doc_figures.env(name) for name in ("dev", "staging", "prod")]
    has_step_scaling = any(s.step_scaling for cfg in configs for s in cfg.autoscaling.values())
    assert ("step scaling" in doc_figures.scaling_line()) == has_step_scaling


@pytest.mark.parametrize("document", test_figures.PLACES, ids=lambda path: path.name)
def test_test_counts_and_times_are_the_records(document: Path) -> None:
    """Rendered from docs/test-runs.json (collected counts, measured runs), never typed."""
    assert test_figures.embedded(document.read_text()) == test_figures.block(test_figures.load())


def test_every_measured_run_says_when_and_where() -> None:
    for target, run in test_figures.load()["measured"].items():
        assert target in test_figures.TIERS
        assert run["passed"] > 0 and run["wall_seconds"] > 0 and run["cpu_seconds"] > 0
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", run["date"]) and "cores" in run["machine"]


def walk_blocks() -> list[tuple[str, str]]:
    return [(name, text) for path in DOCUMENTS for name, text in transcript.blocks_in(path.read_text()).items()]


def test_every_transcript_in_the_docs_is_the_walks() -> None:
    """Each generated block has a step that writes it, and each step's block has its place in the docs."""
    in_docs = {name for name, _ in walk_blocks()}
    written = {step.transcript for step in STEPS if step.transcript}
    assert in_docs == written


@pytest.mark.parametrize("name", sorted({step.transcript for step in STEPS if step.transcript}))
def test_transcripts_show_the_configs_figures(name: str) -> None:
    """Capacity per instance, provisioning time, scaling ranges and targets, schedules, template count, and in
    the fresh sandbox's status the minimums and instance counts: what the transcript shows is the config's."""
    cfg = load_environment("prod", against_deployed=False)
    bodies = [text for block_name, text in walk_blocks() if block_name == name]
    assert bodies, f"no block {name!r} in the docs"
    assert "\n$ " in bodies[0], f"block {name!r} is empty: run `make docs`"
    assert doc_figures.transcript_differences(name, bodies[0], cfg) == []


def test_the_operations_prose_shows_the_configs_figures() -> None:
    """The examples quoted in docs/operations.md's prose, outside the generated blocks, by the same checks."""
    text = (ROOT / "docs" / "operations.md").read_text()
    prose = transcript.BLOCK.sub("", text)
    assert (
        doc_figures.transcript_differences("operations.md", prose, load_environment("prod", against_deployed=False))
        == []
    )


def test_the_transcript_check_finds_a_stale_figure() -> None:
    cfg = load_environment("prod", against_deployed=False)
    rate = cfg.planning.capacity["ml.g5.xlarge"].requests_per_minute
    scaling = cfg.autoscaling["primary"]
    stale = (
        f"  ml.g5.xlarge: assumed: {rate + 1:,.0f}/min, never measured\n"
        f"  primary: min {scaling.min_capacity}, max {scaling.max_capacity + 1}\n"
        "cfn-lint: no errors in 1 templates\n"
    )
    assert len(doc_figures.transcript_differences("status", stale, cfg)) == 3


def documented_commands() -> set[str]:
    return {line for path in DOCUMENTS for _, line in shell_commands(path.read_text())}


def test_every_command_the_docs_print_is_walked_or_says_why_not() -> None:
    walked = {line for step in STEPS for line in step.lines()}
    external = {"git", "export", "unset", "cd", "source"}
    missing = sorted(
        line for line in documented_commands() - walked - set(NOT_WALKED) if line.split()[0] not in external
    )
    assert missing == [], "add each to tools/docs_walk/steps.py (STEPS, or NOT_WALKED with why)"


def test_the_walk_lists_only_what_the_docs_print() -> None:
    documented = documented_commands()
    assert sorted(set(NOT_WALKED) - documented) == []
    assert sorted(line for step in STEPS for line in step.lines() if line not in documented) == []


def test_the_ramps_traffic_fits_the_canary_at_100_percent() -> None:
    """The walk's ramp ends at 100 % on the canary: its max_capacity must serve the traffic at the figure."""
    cfg = load_environment("prod", against_deployed=False)
    canary = cfg.variant("canary")
    per_instance = cfg.planning.capacity[canary.instance_type].requests_per_minute
    assert cfg.autoscaling["canary"].max_capacity * per_instance >= RAMP_PER_MINUTE
