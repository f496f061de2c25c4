"""`make review`: real synths of two revisions of a throwaway repository, compared by the real CDK CLI,
with every AWS variable unset. One module fixture builds the repository and runs two reviews."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a long end-to-end run: `make test-slow` (CI runs it)

ROOT = Path(__file__).resolve().parents[3]
LEFT_OUT = ("tests/", "docs/", "workbench/benchmarks/")  # not needed to synthesise or review


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str
    markdown: str


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                   capture_output=True)  # fmt: skip


def review(repo: Path, base: str, env: str, out: Path) -> Result:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    clean |= {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(out.parent / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(out.parent / "no-credentials"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "workbench.review", base, "--env", env, "--out", str(out)],
        cwd=repo, env=clean, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return Result(done.returncode, done.stdout, done.stderr, out.read_text() if out.exists() else "")


@pytest.fixture(scope="module")
def reviews(tmp_path_factory) -> dict[str, Result]:
    """A copy of this checkout's tracked files as a git repository: `base`, then a README-only commit
    (reviewed as unchanged, dev), then one commit changing prod's schedule, image tag and alarm threshold."""
    repo = tmp_path_factory.mktemp("repo")
    out = tmp_path_factory.mktemp("out")
    listed = subprocess.run(  # tracked and new files, as they are in the working tree
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.split("\0")):
        if not name.startswith(LEFT_OUT) and (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    git(repo, "init", "-q")
    (repo / ".git" / "info" / "exclude").write_text(".venv\nnode_modules\n")
    for toolchain in (".venv", "node_modules"):
        (repo / toolchain).symlink_to(ROOT / toolchain, target_is_directory=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "tag", "base")
    with (repo / "README.md").open("a") as readme:
        readme.write("\nA documentation-only change.\n")
    git(repo, "commit", "-qam", "docs only")
    results = {"unchanged": review(repo, "base", "dev", out / "unchanged.md")}

    prod = repo / "config" / "environments" / "prod.yaml"
    text = prod.read_text()
    text = text.replace("ttft_p95_ms: 500 ", "ttft_p95_ms: 800 ")
    text = text.replace("    image_tag: v0.1.0\n    model_data", "    image_tag: v0.1.0\n    model_data", 1)
    canary = text.index("- name: canary")
    text = text[:canary] + text[canary:].replace("image_tag: v0.1.0", "image_tag: v0.2.0", 1)
    # The off-peak floor raised by 20, above what target tracking holds there at prod's share (its max with it,
    # 1.2 x the floor at least): a cost the review shows.
    off_peak = re.compile(r"(end: cron\(0 6 \* \* \? \*\)\n        min_capacity: )(\d+)(\n        max_capacity: )(\d+)")
    found = off_peak.search(text)
    floor = int(found[2]) + 20
    text = off_peak.sub(lambda m: f"{m[1]}{floor}{m[3]}{max(int(m[4]), math.ceil(1.2 * floor))}", text, count=1)
    prod.write_text(text)
    git(repo, "commit", "-qam", "prod: off-peak floor +20, canary v0.2.0, TTFT alarm at 800 ms")
    results["changed"] = review(repo, "base", "prod", out / "changed.md")
    return results


def test_the_review_is_produced_without_credentials(reviews) -> None:
    for result in reviews.values():
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stdout.strip() == result.markdown.strip()


def test_an_unchanged_revision_reviews_as_no_changes(reviews) -> None:
    markdown = reviews["unchanged"].markdown
    assert "**No changes** (dev): every stack's template and every capacity plan are the same." in markdown
    assert "## dev" not in markdown


def test_a_schedule_change_shows_in_resources_and_capacity_plan(reviews) -> None:
    markdown = reviews["changed"].markdown
    assert (
        "| MangaAssist-prod-Serving | Autoscaling-primary/Target | AWS::ApplicationAutoScaling::ScalableTarget | modified |"
        in markdown
    )
    # plan-diff's Markdown, one heading level down, under the environment's heading
    assert "\n### Capacity plan change: prod (reference week)\n" in markdown
    cost_row = next(line for line in markdown.splitlines() if line.startswith("| Monthly cost (USD) |"))
    assert not cost_row.endswith("| no change |")


def test_an_image_tag_change_replaces_the_model_and_deploys_blue_green(reviews) -> None:
    markdown = reviews["changed"].markdown
    assert (
        "| MangaAssist-prod-Serving | Models/Model-canary | AWS::SageMaker::Model | modified — **replacement** |"
        in markdown
    )
    assert (
        "| MangaAssist-prod-Serving | Endpoint/Config | AWS::SageMaker::EndpointConfig | modified — **replacement** |"
        in markdown
    )
    assert "- endpoint config replaced → a blue/green deployment of about 24 min" in markdown
    assert "v0.2.0" in markdown  # the CLI's own diff, in the details block


def test_a_looser_rollback_alarm_is_called_out(reviews) -> None:
    markdown = reviews["changed"].markdown
    assert "- rollback alarm Alarms/primary-ttft-p95 loosened: Threshold 500 → 800 (GreaterThanThreshold)" in markdown
    assert "- rollback alarm Alarms/canary-ttft-p95 loosened: Threshold 500 → 800" in markdown
