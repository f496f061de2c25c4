"""config/editor.py, the one writer of environment files (issue 30): every line outside the changed
keys stays byte for byte, whatever the file's layout, and a result that would refuse synth is never
written; the refusal names what else must change, told apart from what the file already had."""

from __future__ import annotations

import difflib
import math
import shutil
from pathlib import Path

import pytest
from ruamel.yaml.comments import CommentedMap

from config import load_config_file
from config.editor import EditRefused, edit_environment_file
from workbench.loadtest.record import NotAMeasurement, floor_notes, record_measurement

REPO = Path(__file__).resolve().parents[2]
ENVIRONMENTS = REPO / "config" / "environments"
RECORD = {
    "requests_per_minute_per_instance": 200.0,
    "concurrent_requests_per_instance_at_slo": 14.2,
    "measured_at": "2026-11-25T03:00:00+00:00",
    "slo": {"ttft_p95_ms": 500.0, "max_error_percent": 1.0},
    "target": {"kind": "sagemaker", "environment": "staging", "variant": "canary", "image_tag": "v0.2.0"},
}
ENTRY = """\
  capacity:
    ml.g5.xlarge:
      requests_per_minute: 200.0
      concurrent_sequences: 15
      measured:
        where: staging/canary
        measured_at: '2026-11-25T03:00:00+00:00'
        image_tag: v0.2.0
        slo_ttft_p95_ms: 500.0
        report: capacity-out/x/capacity.json
"""


def copy(tmp_path: Path, env: str, text: str | None = None) -> Path:
    path = tmp_path / f"{env}.yaml"
    if text is None:
        shutil.copy(ENVIRONMENTS / f"{env}.yaml", path)
    else:
        path.write_text(text)
    return path


def changes(before: str, after: str) -> tuple[list[str], list[str]]:
    """(removed lines, added lines) of a line diff."""
    diff = list(difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True)))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def record(path: Path, **changed) -> str:
    return record_measurement(path, "ml.g5.xlarge", {**RECORD, **changed}, Path("capacity-out/x/capacity.json"))


@pytest.mark.parametrize("env", ["staging", "prod"])
def test_a_capacity_write_adds_its_lines_and_changes_no_other(tmp_path, env):
    path = copy(tmp_path, env)
    before = path.read_text()

    record(path)

    removed, added = changes(before, path.read_text())
    assert removed == []
    assert "".join(added) == ENTRY
    assert load_config_file(path, env).planning.capacity["ml.g5.xlarge"].requests_per_minute == 200


def test_measuring_again_changes_only_the_figures_that_moved(tmp_path):
    path = copy(tmp_path, "staging")
    record(path)
    before = path.read_text()

    record(path, requests_per_minute_per_instance=190.0, measured_at="2026-11-26T03:00:00+00:00")

    removed, added = changes(before, path.read_text())
    assert removed == ["      requests_per_minute: 200.0\n", "        measured_at: '2026-11-25T03:00:00+00:00'\n"]
    assert added == ["      requests_per_minute: 190.0\n", "        measured_at: '2026-11-26T03:00:00+00:00'\n"]


def block(lines: list[str], key: str) -> range:
    """The line numbers of a top-level key's block (up to the blank line after it)."""
    first = lines.index(f"{key}:\n") + 1
    return range(first, lines.index("\n", first))


def test_a_layout_a_round_trip_would_rewrite_is_kept(tmp_path):
    """List items at their key's own indent and a block indented by four: a ruamel round trip with the
    files' settings re-indents every such line (the issue's +33/-23); the line edits keep them."""
    lines = (ENVIRONMENTS / "staging.yaml").read_text().splitlines(keepends=True)
    for number in block(lines, "variants"):
        lines[number] = lines[number][2:]  # "  - name:" -> "- name:", "    image_tag:" -> "  image_tag:"
    for number in block(lines, "engine"):
        lines[number] = "  " + lines[number]
    text = "".join(lines)
    path = copy(tmp_path, "staging", text)
    assert load_config_file(path, "staging").variants[1].name == "canary"  # still the same valid config

    record(path)

    removed, added = changes(text, path.read_text())
    assert removed == [] and "".join(added) == ENTRY


def test_a_new_key_goes_before_the_comments_of_the_next_section(tmp_path):
    """ruamel attaches the comment above a section to the last key before it: a key appended there by
    a round trip lands below that comment, which then describes the wrong setting."""
    text = (ENVIRONMENTS / "staging.yaml").read_text()
    flow = "  traffic: {profile: workbench/planner/reference_week.yaml, scale: 0.5}\n"
    assert flow in text
    path = copy(
        tmp_path,
        "staging",
        text.replace(flow, "  traffic:\n    profile: workbench/planner/reference_week.yaml\n    scale: 0.5\n"),
    )
    before = path.read_text()

    record(path)

    after = path.read_text()
    frontier = text[text.index("  frontier:\n") : text.index("\n# Service Quotas")]  # the tuner's (planning.frontier)
    assert "    scale: 0.5\n" + frontier + ENTRY + "\n# Service Quotas" in after
    assert changes(before, after)[0] == []


def test_a_changed_scalar_keeps_its_end_of_line_comment(tmp_path):
    path = copy(tmp_path, "staging")
    before = path.read_text()

    def promote(document):
        document["variants"][0]["image_tag"] = "v0.2.0"

    edit_environment_file(path, promote).write()

    removed, added = changes(before, path.read_text())
    comment = "# container/ as it is: built during `make deploy` (docs/how-to/first-deploy.md, First deploy)\n"
    assert removed == [f"    image_tag: source   {comment}"]
    assert added == [f"    image_tag: v0.2.0   {comment}"]


def test_a_capacity_that_invalidates_a_target_is_refused_naming_what_else_must_change(tmp_path):
    """The issue's case: an explicit target on invocations per instance (valid at the assumed figures of the
    canary's pools, below the lowest of them), a measurement of the preferred type below it."""
    text = (ENVIRONMENTS / "staging.yaml").read_text()
    canary = "      metric: SageMakerVariantConcurrentRequestsPerModelHighResolution\n      target_share_of_concurrency: 0.45\n"
    assert text.count(canary) == 1
    staging = load_config_file(ENVIRONMENTS / "staging.yaml", "staging")
    types = staging.variant("canary").instance_types
    assert types[0] == "ml.g5.xlarge"  # the type record() measures
    lowest = min(staging.planning.capacity[t].requests_per_minute for t in types)
    target = math.floor(0.7 * lowest)  # valid with room for a scale-out, as the refusal advises
    measured = float(target - 10)
    path = copy(
        tmp_path,
        "staging",
        text.replace(canary, f"      metric: SageMakerVariantInvocationsPerInstance\n      target_value: {target}\n"),
    )
    before = path.read_text()

    with pytest.raises(EditRefused) as refused:
        record(path, requests_per_minute_per_instance=measured)

    assert refused.value.already == []
    [(field, message)] = refused.value.brought
    assert field == "autoscaling.canary.target_tracking.target_value"
    assert message.startswith(f"{target} is at or above the {measured:g} requests/min one ml.g5.xlarge serves")
    assert f"allowed: below {measured:g} (70 % of it, {0.7 * measured:.0f}" in message
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["staging.yaml"]  # no staged copy left


def test_a_file_already_invalid_is_said_to_be(tmp_path):
    path = copy(
        tmp_path, "staging", (ENVIRONMENTS / "staging.yaml").read_text().replace("block_size: 16", "block_size: 15")
    )

    with pytest.raises(EditRefused) as refused:
        record(path)

    assert refused.value.brought == [] and refused.value.already
    assert "already invalid before this change" in str(refused.value)


def test_a_stand_in_measurement_is_never_written(tmp_path):
    path = copy(tmp_path, "staging")
    before = path.read_text()
    stand_in = {**RECORD["target"], "stand_in": "the sandbox's stand-in engine (MANGAASSIST_SANDBOX=staging)"}

    with pytest.raises(NotAMeasurement, match="measured against the sandbox's stand-in engine"):
        record(path, target=stand_in)

    assert path.read_text() == before


def test_a_lower_figure_names_the_floors_that_now_carry_less(tmp_path):
    cfg = load_config_file(copy(tmp_path, "staging"), "staging")

    notes = floor_notes(cfg, "ml.g5.xlarge", 100.0)

    # Every window of the primary (the canary's window carries too little to reach 100/min's count first).
    windows = cfg.autoscaling["primary"].schedules
    assert len(notes) == len(windows)
    capacity = cfg.planning.capacity["ml.g5.xlarge"].requests_per_minute
    first = windows[0]
    carried = first.min_capacity * capacity
    takes = math.ceil(carried / 100)
    expected = (
        f"autoscaling.primary.schedules[0].min_capacity ({first.name}): {first.min_capacity} carried up to "
        f"{first.min_capacity} x {capacity:g} = {carried:,.0f}/min; at 100/min the same rate takes {takes}"
    )
    assert notes[0].startswith(expected), notes[0]
    if takes > first.max_capacity:
        assert notes[0].endswith(f", above the window's max_capacity {first.max_capacity}")
    assert floor_notes(cfg, "ml.g5.xlarge", 200.0) == []  # a higher figure carries more


def test_an_edit_that_adds_nothing_changes_nothing(tmp_path):
    path = copy(tmp_path, "prod")

    edit = edit_environment_file(path, lambda document: document.setdefault("planning", CommentedMap()))

    assert not edit.changed
