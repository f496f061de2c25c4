"""`python -m workbench.review.pull_request_comment [--gate ENV=CODE ...] [--out FILE]`: the pull-request workflow's one
comment, from what the earlier steps wrote: each environment's capacity gate (`bin/plan ENV`'s exit code,
and the verdict in plan-out/ENV/summary.md), each plan diff (plan-out/ENV-diff.md, `make plan-diff`) and the
review (review-out/review.md, `make review`).

The body starts with `MARKER`, which the workflow looks for to update its comment instead of adding one.
GitHub refuses a longer comment body than 65,536 ("Body is too long (maximum is 65536 characters)", the
REST API's error; what it counts is not documented, and characters, UTF-16 units and UTF-8 bytes all
differ beyond ASCII), so the body is kept within 65,536 UTF-8 bytes, which bounds the other two counts as
well: the sections are cut, review first, at a line, with their open code blocks and <details> closed and
a line saying where the whole text is (the run's artifact). Exit 0; 2 for a malformed --gate.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

MARKER = "<!-- mangaassist-pull-request-review -->"
MAX_BYTES = 65_536
ARTIFACT = "pull-request-review"  # .github/workflows/pull-request.yml uploads review-out/ and plan-out/ under it
GATE_MEANING = {0: "met", 1: "not met", 2: "no verdict: unknown environment, invalid config or traffic file"}
FENCE = re.compile(r"^\s*```")


@dataclass
class Section:
    title: str
    body: str
    collapsed: bool = True

    def render(self, body: str | None = None) -> str:
        text = self.body if body is None else body
        if not self.collapsed:
            return f"### {self.title}\n\n{text.rstrip()}\n"
        return f"<details><summary>{self.title}</summary>\n\n{text.rstrip()}\n\n</details>\n"


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def parse_gate(value: str) -> tuple[str, int]:
    env, sep, code = value.partition("=")
    if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", env) or not code.isdigit():
        raise argparse.ArgumentTypeError(f"--gate must be ENV=EXIT_CODE, e.g. prod=1; got '{value}'")
    return env, int(code)


def verdict_lines(summary: str) -> list[str]:
    """The checks of a plan summary's "### Verdict" section that are not met."""
    section = summary.partition("### Verdict")[2].split("\n### ", 1)[0]
    return [line[2:].strip() for line in section.splitlines() if line.startswith("- ") and "not met" in line]


def gate_table(gates: list[tuple[str, int]], plans: Path) -> str:
    if not gates:
        return (
            "No environment's capacity plan can move with this change (workbench/review/changed_environments.py: no "
            "environment file, traffic profile, catalog, config code or planner code changed).\n"
        )
    rows = ["| environment | `bin/plan ENV` | verdict |", "|---|---|---|"]
    for env, code in gates:
        summary = plans / env / "summary.md"
        meaning = GATE_MEANING.get(code, "no verdict")
        failed = verdict_lines(summary.read_text()) if code == 1 and summary.is_file() else []
        detail = f"{meaning}: " + "; ".join(line.rstrip(".") for line in failed) if failed else meaning
        rows.append(f"| {env} | exit {code} | {detail.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def sections(gates: list[tuple[str, int]], review: Path, plans: Path) -> list[Section]:
    """In the order they are kept when the body must be cut (the last is cut first)."""
    found = []
    for env, _ in gates:
        diff = plans / f"{env}-diff.md"
        body = diff.read_text() if diff.is_file() else "`make plan-diff` wrote no comparison: the job log says why."
        found.append(Section(f"Plan diff: {env} (<code>make plan-diff ENV={env}</code>)", body))
    for env, _ in gates:
        summary = plans / env / "summary.md"
        if summary.is_file():
            found.append(Section(f"Plan: {env} (<code>bin/plan {env}</code>)", summary.read_text()))
    text = review.read_text() if review.is_file() else "`make review` wrote no review: the job log says why."
    found.append(Section("Review (<code>make review</code>)", text, collapsed=False))
    return found


def cut(text: str, budget: int) -> str:
    """`text` within `budget` bytes, cut at a line, its code block and <details> closed, with a note."""
    if size(text) <= budget:
        return text
    note = f"\n*… cut to fit GitHub's comment limit: the whole text is in the run's artifact `{ARTIFACT}`.*\n"
    lines = text.splitlines()
    kept_bytes, in_fence, open_details = 0, False, 0
    prefixes = [(0, "")]  # for each number of lines kept: (their bytes, what closes them)
    for line in lines:
        kept_bytes += size(line) + 1
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            open_details = max(open_details + line.count("<details") - line.count("</details>"), 0)
        prefixes.append((kept_bytes, ("```\n" if in_fence else "") + "</details>\n" * open_details))
    for count in reversed(range(len(lines))):
        kept, closes = prefixes[count]
        if kept + size(closes) + size(note) <= budget:
            return "\n".join(lines[:count]) + ("\n" if count else "") + closes + note
    return ""


def comment(gates: list[tuple[str, int]], review: Path, plans: Path, limit: int = MAX_BYTES) -> str:
    head = f"{MARKER}\n## Capacity plans and review\n\n{gate_table(gates, plans)}\n"
    parts = sections(gates, review, plans)
    rendered = [part.render() for part in parts]
    budget = limit - size(head)
    for index in reversed(range(len(parts))):
        over = size("\n".join(rendered)) - budget
        if over <= 0:
            break
        wrapper = size(parts[index].render("")) + 1
        room = max(size(rendered[index]) - over - wrapper, 0)
        rendered[index] = parts[index].render(cut(parts[index].body, room)) if room else ""
    body = head + "\n".join(r for r in rendered if r)
    return body if size(body) <= limit else cut(body, limit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.review.pull_request_comment", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gate", type=parse_gate, action="append", default=[], metavar="ENV=CODE")
    parser.add_argument("--review", type=Path, default=Path("review-out/review.md"))
    parser.add_argument(
        "--plans", type=Path, default=Path("plan-out"), help="make plan-diff's and bin/plan's directory"
    )
    parser.add_argument("--out", type=Path, default=Path("review-out/comment.md"))
    args = parser.parse_args(argv)
    body = comment(args.gate, args.review, args.plans)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(body)
    print(f"wrote {args.out} ({size(body):,} bytes of GitHub's {MAX_BYTES:,})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
