"""cfn-lint on the synthesised templates, in two processes forked from one that has loaded cfn-lint.

`python -m ops.pipeline.lint_templates TEMPLATE...` is `make cfn-lint`; `make synth` (ops/pipeline/synth.py) loads
cfn-lint while the CDK synthesises, so that only the linting itself is left once the templates are written.
Each process runs cfn-lint's own command line on its share of the templates (its output and exit code:
cfn-lint 1.58 cfnlint/runner/cli.py `main`), so two processes find what one finds. The heaviest templates are
spread first: the serving templates take about three times an image template's time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
from pathlib import Path

from ops.operations.child_process import interrupt_held_while_starting
from ops.operations.interrupts import STOPPING, entry_point

WORKERS = 2  # the cores of the machine `make synth` is measured on; one more gained nothing there


@functools.cache  # once per process: make synth loads it while the CDK synthesises, then lints
def load_cfn_lint() -> None:
    """cfn-lint's modules and rules, imported (about 0.9 s of the 1.5 s cfn-lint takes on an image template alone)."""
    from cfnlint.config import ConfigMixIn
    from cfnlint.runner.cli import Runner

    Runner(ConfigMixIn([]))  # imports every rule module


def shares(templates: list[Path], count: int = WORKERS) -> list[list[Path]]:
    """`templates` dealt largest first to whichever share is lightest, by size, then by count."""
    dealt: list[list[Path]] = [[] for _ in range(count)]
    weights = [0] * count
    for template in sorted(templates, key=lambda path: path.stat().st_size, reverse=True):
        lightest = min(range(count), key=lambda share: (weights[share], len(dealt[share])))
        dealt[lightest].append(template)
        weights[lightest] += template.stat().st_size
    return [share for share in dealt if share]


def _lint_in_child(share: list[Path]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for sig in STOPPING:  # an interrupt ends this process at once and quietly: the parent says it, once
            signal.signal(sig, signal.SIG_DFL)
        from cfnlint.runner.cli import main

        sys.argv = ["cfn-lint", *map(str, share)]
        main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    finally:  # never back into the parent's code, whatever happened (an interrupt before the reset above)
        sys.stdout.flush()
        os._exit(code)


def lint(templates: list[Path]) -> int:
    """cfn-lint's exit code for the templates: the highest of its processes' (cfn-lint's codes are bit flags)."""
    load_cfn_lint()
    sys.stdout.flush()  # not written twice by the children
    children: list[int] = []
    try:
        with interrupt_held_while_starting():  # no child started and not known
            children = [_lint_in_child(share) for share in shares(templates)]
        code = 0
        for child in children:
            _, status = os.waitpid(child, 0)
            ended = os.waitstatus_to_exitcode(status)  # -N when signal N ended it: a failure, as a shell says it
            code = max(code, ended if ended >= 0 else 128 - ended)
        return code
    except KeyboardInterrupt:
        for child in children:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(child, signal.SIGTERM)
                os.waitpid(child, 0)
        raise


def main(argv: list[str]) -> int:
    templates = [Path(arg) for arg in argv]
    if not templates or not all(path.exists() for path in templates):
        print("usage: python -m ops.pipeline.lint_templates TEMPLATE... (the last make synth's: cdk.out/all)", file=sys.stderr)
        return 2
    code = lint(templates)
    if code == 0:
        print(f"cfn-lint: no errors in {len(templates)} templates")
    return code


if __name__ == "__main__":
    entry_point(lambda: main(sys.argv[1:]), "make cfn-lint: interrupted; the templates in cdk.out/all were not all linted")
