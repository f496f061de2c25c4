"""`python -m workbench.review.pull_request_comment`: one comment body from the gates, the plan diffs and the review,
starting with its marker and never over GitHub's limit, cut with its Markdown still well formed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.review.pull_request_comment import MARKER, MAX_BYTES, comment, cut, main

# A real plan of prod (`bin/plan prod`'s summary.md, kept beside this file), its verdict turned to "not met" on
# shortfall whatever that plan said.
REAL_SUMMARY = (Path(__file__).parent / "prod_plan_summary.md").read_text()
SHORTFALL_NOT_MET = "Shortfall in all: 45 minutes against a budget of 30 a week: not met."
PROD_SUMMARY = re.sub(
    r"### Verdict: (not )?met\n\n", f"### Verdict: not met\n\n- {SHORTFALL_NOT_MET}\n", REAL_SUMMARY, count=1
)


def review_text(stacks: int) -> str:
    """A review shaped as workbench/review/report.py writes it: a <details> with a code block per stack, non-ASCII."""
    parts = ["# Review of this change", ""]
    for n in range(stacks):
        lines = [f"[~] AWS::SageMaker::EndpointConfig Config{n} 日本語 ✓ 🌈 {i}" for i in range(40)]
        parts += [f"<details><summary>cdk diff Stack{n}</summary>", "", "```", *lines, "```", "", "</details>", ""]
    return "\n".join(parts)


@pytest.fixture
def outputs(tmp_path: Path) -> tuple[Path, Path]:
    review, plans = tmp_path / "review-out/review.md", tmp_path / "plan-out"
    review.parent.mkdir()
    (plans / "prod").mkdir(parents=True)
    (plans / "staging").mkdir()
    review.write_text(review_text(3))
    (plans / "prod-diff.md").write_text("## prod: this change against main\n\n| | base | head |\n|---|---|---|\n")
    (plans / "prod/summary.md").write_text(PROD_SUMMARY)
    (plans / "staging/summary.md").write_text(PROD_SUMMARY.replace("Verdict: not met", "Verdict: met"))
    return review, plans


def well_formed(body: str) -> bool:
    fences = [line for line in body.splitlines() if re.match(r"^\s*```", line)]
    return len(fences) % 2 == 0 and body.count("<details") == body.count("</details>")


def test_the_gates_verdicts_diffs_and_review_in_one_body(outputs) -> None:
    review, plans = outputs

    body = comment([("staging", 0), ("prod", 1), ("dev", 2)], review, plans)

    assert body.splitlines()[0] == MARKER
    assert "| staging | exit 0 | met |" in body
    assert f"| prod | exit 1 | not met: {SHORTFALL_NOT_MET.removesuffix('.')}" in body
    assert "| dev | exit 2 | no verdict: unknown environment, invalid config or traffic file |" in body
    assert "## prod: this change against main" in body
    assert "`make plan-diff` wrote no comparison: the job log says why." in body  # staging's and dev's
    assert review.read_text().strip() in body and "cut to fit" not in body
    assert well_formed(body)


def test_no_environment_moved_says_so(outputs) -> None:
    review, plans = outputs
    body = comment([], review, plans)
    assert "No environment's capacity plan can move with this change" in body and "Plan diff" not in body


def test_a_review_too_long_is_cut_first_within_the_limit_and_still_well_formed(outputs) -> None:
    review, plans = outputs
    review.write_text(review_text(400))  # about 1 MB of multi-byte text

    body = comment([("prod", 1)], review, plans)

    assert len(body.encode()) <= MAX_BYTES
    assert "## prod: this change against main" in body and "### Verdict: not met" in body  # kept whole
    assert "cut to fit GitHub's comment limit: the whole text is in the run's artifact `pull-request-review`" in body
    assert well_formed(body)


def test_a_cut_inside_a_code_block_and_details_closes_both() -> None:
    text = "intro\n<details><summary>x</summary>\n\n```\n" + "\n".join(f"line {i}" for i in range(100)) + "\n```\n"

    kept = cut(text, 200)

    assert len(kept.encode()) <= 200 and kept.startswith("intro\n<details>")
    assert kept.count("```") == 2 and kept.count("</details>") == 1 and well_formed(kept)
    assert cut(text, 10_000) == text


def test_the_command_writes_the_file_and_refuses_a_malformed_gate(outputs, tmp_path: Path, capsys) -> None:
    review, plans = outputs
    out = tmp_path / "comment.md"

    assert main(["--gate", "prod=1", "--review", str(review), "--plans", str(plans), "--out", str(out)]) == 0
    assert out.read_text().startswith(MARKER)
    with pytest.raises(SystemExit) as refused:
        main(["--gate", "prod"])
    assert refused.value.code == 2
    assert "--gate must be ENV=EXIT_CODE, e.g. prod=1; got 'prod'" in capsys.readouterr().err
