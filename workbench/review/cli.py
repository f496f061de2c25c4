"""`python -m workbench.review BASE [--env ENV] [--out FILE]` (`make review BASE=main [ENV=prod]`).

Synthesises BASE (exported from git) and this checkout's working tree once each, with `-c env=all`
or the one environment asked for, side by side; compares every stack with `cdk diff --template`;
adds the deploy consequences and the capacity-plan comparison; prints the review and writes it as
one Markdown file. Exit 0 when the review was produced, whatever it says; 2 when BASE is unknown.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from config import naming
from config.loader import ConfigError, known_environments, load_environment
from config.naming import environment_label
from ops.operations.child_process import interrupt_held_while_starting, stop_group
from workbench.review.capacity import compare_plans
from workbench.review.consequences import deploy_consequences
from workbench.review.report import EnvironmentReview, Review, render
from workbench.review.revisions import (
    ROOT,
    Assembly,
    RevisionError,
    export,
    finish_synth,
    pin_differences,
    resolve,
    start_synth,
)
from workbench.review.security import guard_sources_changed
from workbench.review.stack_diff import StackDiff, diff_stack

DEFAULT_OUT = Path("review-out/review.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.review", description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="git revision to compare with (branch, tag, commit)")
    parser.add_argument("--env", help="one environment (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"Markdown file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.env is not None and args.env not in known_environments():
        return _fail(f"unknown environment '{args.env}'; known: {', '.join(known_environments())}")
    try:
        commit = resolve(args.base)
    except RevisionError as error:
        return _fail(str(error))
    envs = [args.env] if args.env else known_environments()
    with tempfile.TemporaryDirectory(prefix="review-") as scratch:
        try:
            review = build_review(args.base, commit, envs, args.env or "all", Path(scratch))
        except RevisionError as error:
            return _fail(str(error))
    text = render(review)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def build_review(base_rev: str, commit: str, envs: list[str], context_env: str, scratch: Path) -> Review:
    base_src = export(commit, scratch / "base-src")
    base, head = _synthesise(
        [(f"BASE {base_rev}", base_src, scratch / "base.out"), ("HEAD", ROOT, scratch / "head.out")],
        context_env,
        f"synthesising {base_rev} ({commit[:10]}) and the working tree (-c env={context_env})",
    )
    review = Review(f"`{base_rev}` ({commit[:10]})", _head_label(), _cdk_version(), [])
    review.notes += guard_sources_changed(ROOT, commit)
    pins = pin_differences(base_src)
    if pins:
        review.notes.append(f"{', '.join(pins)} differ at BASE; BASE was synthesised with this checkout's toolchain.")
    for side in (base, head):
        if side.error:
            review.failures.append(f"{side.label} does not synthesise:\n{side.error}")
    stacks = [name for env in envs for name in _stacks(env, base, head)]
    diffs: dict[str, StackDiff] = {}
    if not review.failures:
        with ThreadPoolExecutor(max_workers=3) as pool:
            try:
                for diff in pool.map(lambda stack: diff_stack(stack, base, head, scratch), stacks):
                    diffs[diff.stack] = diff
            except KeyboardInterrupt:  # the diffs under way had the terminal's SIGINT too; none more starts
                pool.shutdown(cancel_futures=True)
                raise
    for env in envs:
        env_diffs = [diffs[s] for s in _stacks(env, base, head) if s in diffs]
        environment = EnvironmentReview(env, env_diffs)
        if not review.failures:
            serving = naming.serving_stack_name(env)
            environment.consequences = deploy_consequences(
                env, _template(base, serving), _template(head, serving), env_diffs, _head_config(env)
            )
        relative = Path(environment_label(env))
        environment.plan = compare_plans(env, base_src / relative, ROOT / relative)
        review.environments.append(environment)
    return review


def _synthesise(sides: list[tuple[str, Path, Path]], context_env: str, what: str) -> list[Assembly]:
    """Each (label, app directory, output) synthesised, side by side. `what` goes to stderr once they run: the work is
    under way (and Ctrl-C lands in it). On Ctrl-C each synth's process group
    (the CDK CLI, app.py, jsii's Node) is stopped and waited for before KeyboardInterrupt goes on up: the scratch
    directory they write to is removed next."""
    running = []
    try:
        for _, app_dir, out in sides:
            with interrupt_held_while_starting():  # a synth started is a synth in `running`, to be stopped
                running.append(start_synth(app_dir, out, context_env))
        print(f"{what} …", file=sys.stderr)
        return [finish_synth(process, *side) for process, side in zip(running, sides, strict=True)]
    except KeyboardInterrupt:
        for process in running:
            stop_group(process)
        raise


def _stacks(env: str, base: Assembly, head: Assembly) -> list[str]:
    """The environment's stacks on either side: the pipeline's role stack only where config has `ci:`,
    so that a change to its trust or permissions boundary is reviewed like the others."""
    ci_access = naming.ci_access_stack_name(env)
    optional = [ci_access] if base.template(ci_access) or head.template(ci_access) else []
    return [naming.image_stack_name(env), naming.serving_stack_name(env), *optional]


def _template(assembly: Assembly, stack: str) -> dict | None:
    path = assembly.template(stack)
    return json.loads(path.read_text()) if path else None


def _head_config(env: str):
    try:
        return load_environment(env, against_deployed=False)
    except ConfigError:
        return None


def _head_label() -> str:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return f"`HEAD` ({commit[:10]}{', with uncommitted changes' if dirty else ''})"


def _cdk_version() -> str:
    package = ROOT / "node_modules" / "aws-cdk" / "package.json"
    return json.loads(package.read_text())["version"] if package.exists() else "unknown"


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
