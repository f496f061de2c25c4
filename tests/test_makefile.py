"""What a newcomer meets in the Makefile (issue 53): `make help` lists every target the docs name, and a
mistyped environment is refused by every target that takes one, `make synth` included."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)


def documented_targets() -> set[str]:
    found = set()
    for doc in DOCS:
        text = doc.read_text()  # `make X` in backticks, or a shell line starting with it
        found |= set(re.findall(r"`make (?:-s )?([a-z][\w-]*)", text))
        found |= set(re.findall(r"^\s*(?:\$ )?make (?:-s )?([a-z][\w-]*)", text, re.MULTILINE))
    return found


def test_make_help_lists_every_target_the_docs_name() -> None:
    listed = set(re.findall(r"^make ([a-z][\w-]*)", make("help").stdout, re.MULTILINE))
    assert documented_targets() - listed == set()
    assert {"synth", "test", "cfn-lint", "deps", "clean"} <= listed


def test_every_documented_target_exists() -> None:
    phony = re.search(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(), re.MULTILINE).group(1).split()
    assert documented_targets() - set(phony) == set()


def test_make_synth_refuses_an_unknown_environment_before_synthesising() -> None:
    done = make("synth", "ENV=prdo")
    assert done.returncode == 2
    assert "error: unknown environment 'prdo'; known: dev, prod, staging" in done.stderr
    assert "synthesised:" not in done.stdout
