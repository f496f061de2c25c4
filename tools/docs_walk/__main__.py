"""`python -m tools.docs_walk [--write] [--keep]` (`make docs-walk`; `make docs` passes --write)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from config import load_environment
from tools import doc_figures, test_figures
from tools.docs_walk import findings, run, transcript
from tools.docs_walk.steps import STEPS, Step
from tools.docs_walk.tree import git, make_tree

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# As a new user's shell: no AWS or sandbox variables, no activated virtualenv; a clock other than UTC, so the
# transcripts show times "on your clock"; output as wide as the status lines are written for.
# make's own variables too: run from `make docs`, they would make every make in the walk a sub-make ("make[1]:
# Entering directory").
DROPPED = ("AWS_", "MANGAASSIST_", "VIRTUAL_ENV", "PYTHON", "MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES")
WALK_ENV = {"TZ": "Europe/Berlin", "COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1"}


@dataclass
class Row:
    number: int
    step: Step
    result: run.Result
    interrupted: bool
    problems: list[str]


def environment(tree: Path, tmp: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(DROPPED)}
    path = [part for part in env.get("PATH", "").split(":") if "/.venv" not in part]
    env.update(WALK_ENV, PATH=":".join(path), TMPDIR=str(tmp), HOME=str(tmp))
    env["BASE_SHA"] = git("rev-parse", "main", cwd=tree)  # the CI commands' base: a pull request's target
    return env


def walk(tree: Path, env: dict[str, str], selected: list[tuple[int, Step]], log: Path | None) -> list[Row]:
    """Runs the steps in order; with `log`, each run's raw transcript is appended to it as it ends."""
    rows: list[Row] = []
    background: run.Running | None = None
    try:
        for number, step in selected:
            already = len(rows)
            if step.stops:
                if background is None:
                    continue
                at = run.interrupt(background)
                result = run.finish(background, timeout=time.monotonic() - background.started + 60, interrupted_at=at)
                background = None
                rows.append(Row(number, step, result, True, findings.problems(step, result, interrupted=True)))
            elif step.background:
                background = run.start(step.command, tree, env)
                run.wait_for(background, step.ready, step.interrupt or 0)
            else:
                if step.interrupt is not None:
                    result = run.run_interrupted(step.command, tree, env, step.interrupt, step.ready)
                    rows.append(Row(number, step, result, True, findings.problems(step, result, interrupted=True)))
                if not step.interrupt_only:
                    result = run.run(step.command, tree, env, step.timeout)
                    rows.append(Row(number, step, result, False, findings.problems(step, result, interrupted=False)))
                    if step.exports:
                        run.apply_exports(result.output, env)
            for row in rows[already:]:
                print(_line(row), flush=True)
                if log is not None:
                    with log.open("a") as out:
                        shown = ("(Ctrl-C) " if row.interrupted else "") + row.step.command
                        out.write(transcript.entry(shown, row.result.output, row.result.exit_status) + "\n\n")
    finally:
        if background is not None and background in run.STARTED:
            run.interrupt(background)
            run.finish(background, timeout=time.monotonic() - background.started + 30)
        run.stop_all()  # a step the walk's own Ctrl-C interrupted
        if (tree / ".sandbox").is_dir():  # a sandbox the walk left running: stopped, never the user's
            for state in (tree / ".sandbox").glob("*.json"):
                if "-" not in state.stem:
                    run.run(f".venv/bin/python -m workbench.sandbox stop {state.stem}", tree, env, 60)
    return rows


def _line(row: Row) -> str:
    what = ("(Ctrl-C) " if row.interrupted else "") + row.step.command
    what = what if len(what) <= 92 else what[:89] + "..."
    verdict = "ok" if not row.problems else "FAIL: " + "; ".join(row.problems)
    return f"{row.number:>3}  {what:<92}  {row.result.exit_status:>4}  {row.result.seconds:>6.1f}  {row.result.cpu_seconds:>6.1f}  {verdict}"


def summary(rows: list[Row]) -> str:
    header = f"{'#':>3}  {'command':<92}  {'exit':>4}  {'wall s':>6}  {'CPU s':>6}  result"
    total = sum(row.result.seconds for row in rows)
    failed = sum(1 for row in rows if row.problems)
    lines = [header, *(_line(row) for row in rows)]
    lines.append(
        f"{len(rows)} runs ({sum(1 for r in rows if r.interrupted)} interrupted with Ctrl-C), {failed} failed, {total:.0f} s"
    )
    return "\n".join(lines)


def transcripts(rows: list[Row], tree: Path, tmp: Path) -> dict[str, str]:
    entries: dict[str, list[str]] = {}
    for row in rows:
        if row.step.transcript is None or (row.interrupted and not row.step.interrupt_only):
            continue
        output = row.result.output
        if row.interrupted and row.result.interrupted_output is not None:
            cut = len(output) - len(row.result.interrupted_output)
            output = output[:cut].rstrip("\n") + "\n^C\n" + output[cut:].lstrip("\n")
        shown = row.step.shown or row.step.command
        normalised = transcript.normalise(output, tree, tmp, clock=row.step.clock)
        text = transcript.entry(shown, normalised, row.result.exit_status)
        entries.setdefault(row.step.transcript, []).append(text)
    return {name: transcript.block(name, texts) for name, texts in entries.items()}


def stale_figures(generated: dict[str, str]) -> list[str]:
    """Figures of the checkout's docs that its code and config contradict: the rendered ones (tools/doc_figures.py),
    the test counts against what pytest collects now, and the transcripts of this walk (or the docs' own)."""
    found = doc_figures.differences()
    record = test_figures.load()
    for target in ("test", "test-slow"):
        if (now := test_figures.collect(target)) != record["collected"].get(target):
            found.append(
                f"make {target}: docs/test-runs.json says {record['collected'].get(target)} tests, pytest collects {now}"
            )
    for path in DOCUMENTS:
        if (embedded := test_figures.embedded(path.read_text())) is not None and embedded != test_figures.block(record):
            found.append(f"{path.name}: the test figures are not docs/test-runs.json's")
    blocks = {name: text for path in DOCUMENTS for name, text in transcript.blocks_in(path.read_text()).items()}
    cfg = load_environment("prod", against_deployed=False)
    for name, text in (blocks | generated).items():
        found.extend(doc_figures.transcript_differences(name, text, cfg))
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_walk", description=__doc__)
    parser.add_argument("--write", action="store_true", help="put the transcripts into the docs (only a clean walk)")
    parser.add_argument("--keep", action="store_true", help="keep the walk's tree and print where it is")
    parser.add_argument(
        "--steps", help="N,FIRST-LAST,...: only these steps (numbers in the summary), to work on the walk"
    )
    parser.add_argument("--reuse", type=Path, help="a workspace --keep left (its tree as it is), to work on the walk")
    parser.add_argument("--out", type=Path, help="also write the summary and the raw transcripts to this folder")
    args = parser.parse_args(argv)
    numbered = list(enumerate(STEPS, start=1))
    if args.steps:  # "3,63-64": the sandbox started, then the steps that stop it
        ranges = [part.partition("-") for part in args.steps.split(",")]
        numbered = [(n, s) for n, s in numbered if any(int(a) <= n <= int(b or a) for a, _, b in ranges)]
    workspace = args.reuse or Path(tempfile.mkdtemp(prefix="docs-walk-"))
    try:
        tree = workspace / "repo" if args.reuse else make_tree(ROOT, workspace)
        tmp = workspace / "tmp"
        print(f"docs walk: {len(numbered)} steps in a fresh copy at {tree}", flush=True)
        log = None
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            log = args.out / "walk.txt"
            log.write_text("")
        rows = walk(tree, environment(tree, tmp), numbered, log)
        report = summary(rows)
        print("\n" + report)
        generated = transcripts(rows, tree, tmp)
        if args.out:
            (args.out / "summary.txt").write_text(report + "\n")
            (args.out / "transcripts.md").write_text("\n\n".join(generated.values()) + "\n")
        # the runs a transcript shows: a step's whole run (its Ctrl-C run is a check of its own) or, for a long
        # command only interrupted, that run
        failing = {r.step.transcript for r in rows if r.problems and (r.step.interrupt_only or not r.interrupted)}
        if args.write:  # a block is written only when every step that makes it passed
            written = {name: text for name, text in generated.items() if name not in failing}
            placed = transcript.write(DOCUMENTS, written)
            print(f"transcripts written: {', '.join(sorted(placed)) or 'none'}")
            if unplaced := sorted(set(written) - set(placed)):
                print(f"no place in the docs for the transcripts {unplaced}", file=sys.stderr)
            if held := sorted(set(generated) & failing):
                print(f"transcripts NOT written (a step failed): {', '.join(held)}", file=sys.stderr)
        stale = [] if args.steps else stale_figures({} if args.write else generated)
        for problem in stale:
            print(f"stale figure: {problem}")
        print("stale figures: not checked (--steps)" if args.steps else f"stale figures: {len(stale)}")
        return 1 if any(row.problems for row in rows) or stale else 0
    except KeyboardInterrupt:
        print("docs walk: interrupted; its sandbox stopped", file=sys.stderr)
        return 130
    finally:
        if args.keep or args.reuse:
            print(f"kept: {workspace}")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
