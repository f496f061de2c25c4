"""`make diff` and `make review` pass the pinned CDK CLI only options it knows (`cdk diff` has no --all),
and the review diffs with the same metadata flags as `make synth`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from workbench.review.revisions import CDK, CDK_FLAGS

ROOT = Path(__file__).resolve().parents[3]
MAKEFILE = (ROOT / "Makefile").read_text()


def makefile_flags() -> list[str]:
    return re.search(r"^CDK_FLAGS := (.*)$", MAKEFILE, re.MULTILINE).group(1).split()


def test_the_review_uses_the_synths_flags() -> None:
    assert makefile_flags() == CDK_FLAGS


def test_make_diff_passes_only_options_cdk_diff_knows() -> None:
    # The CLI's part of the recipe: after `$(CDK) diff`, continuation lines joined (ops/pipeline/quiet_child.py runs it)
    rule = re.search(r"^diff: deps\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE).group(1).replace("\\\n", " ")
    recipe = rule.split("$(CDK) diff", 1)[1].splitlines()[0]
    options = [word.split("=")[0] for word in recipe.split() if word.startswith("-")]
    options += makefile_flags() + ["--template", "--exclusively", "--fail-on", "--app", "--no-color"]
    help_text = subprocess.run([str(CDK), "diff", "--help"], capture_output=True, text=True, check=True).stdout
    known = set(re.findall(r"^\s+(--[a-z-]+)", help_text, re.MULTILINE)) | {"-c", "-o"}
    unknown = [o for o in options if o not in known and o.replace("--no-", "--", 1) not in known]
    assert unknown == []
    assert "--all" not in recipe
