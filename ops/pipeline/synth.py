"""`python -m ops.pipeline.synth OUTDIR -- COMMAND...`: `make synth`. COMMAND (the CDK CLI's `cdk synth`) writes
OUTDIR.new, which replaces OUTDIR only when it succeeded (a broken environment, or Ctrl-C, leaves the last good
templates, which the sandbox and every ops command read); then cfn-lint checks every template
(ops/pipeline/lint_templates.py).

cfn-lint is loaded while the CDK synthesises: the synth keeps about one core busy (app.py and jsii's Node take
turns), so on two cores the load runs beside it. Interrupted, it is one line saying what it leaves, and
128 + the signal, as ops/pipeline/quiet_child.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

from ops.operations.child_process import run_child
from ops.operations.interrupts import entry_point
from ops.pipeline import lint_templates

USAGE = "usage: python -m ops.pipeline.synth OUTDIR -- COMMAND..."


class Synth:
    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir
        self.linting = False

    def interrupted(self) -> str:
        if self.linting:
            return f"make synth: interrupted; the templates in {self.outdir} were not all linted"
        return f"make synth: interrupted; {self.outdir} keeps the last templates"

    def run(self, command: list[str]) -> int:
        staged = self.outdir.with_name(self.outdir.name + ".new")
        shutil.rmtree(staged, ignore_errors=True)
        loading = threading.Thread(target=lint_templates.load_cfn_lint, daemon=True)
        loading.start()
        code = run_child([*command, "-o", str(staged)], Path.cwd(), stdout=subprocess.DEVNULL)
        if code:
            return code
        shutil.rmtree(self.outdir, ignore_errors=True)
        staged.rename(self.outdir)
        templates = sorted(self.outdir.glob("*.template.json"))
        print("synthesised: " + " ".join(path.name for path in templates))
        self.linting = True
        loading.join()
        return lint_templates.main([str(path) for path in templates])


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    synth = Synth(Path(argv[0]))
    entry_point(lambda: synth.run(argv[2:]), synth.interrupted)


if __name__ == "__main__":
    main(sys.argv[1:])
