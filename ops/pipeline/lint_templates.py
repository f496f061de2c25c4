"""`python -m ops.pipeline.lint_templates TEMPLATE...`: `make synth`'s cfn-lint step. Every template is linted by
the pinned cfn-lint, except one whose exact bytes this same cfn-lint version has already passed (a warm
synth of an unchanged stack); the rest are linted in two processes at once (2 cores here).

A pass is recorded only after cfn-lint exited 0 on it, keyed by the template's bytes, the cfn-lint version
and the project's cfn-lint configuration, so a cached pass is the verdict cfn-lint would give again.
Exit status: cfn-lint's own (0 clean; see `cfn-lint --help` for its error/warning bits).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

from ops.operations.child_process import interrupt_held_while_starting, stop_group
from ops.operations.interrupts import entry_point

CFN_LINT = Path(sys.executable).parent / "cfn-lint"  # the virtualenv's, beside this Python
# cfn-lint's configuration files (its README, "Config File"): the working directory's and the home directory's.
CONFIG_FILES = (Path(".cfnlintrc"), Path(".cfnlintrc.yaml"), Path(".cfnlintrc.json"), Path.home() / ".cfnlintrc")
PASSED_DIR = Path("cdk.out") / "cfn-lint-passed"  # `make clean` empties it with the rest of cdk.out
PROCESSES = 2


def pass_key(template: Path) -> str:
    digest = hashlib.sha256(f"cfn-lint {version('cfn-lint')}\0".encode())
    for config in CONFIG_FILES:
        if config.exists():
            digest.update(str(config).encode() + b"\0" + config.read_bytes() + b"\0")
    digest.update(template.read_bytes())
    return digest.hexdigest()


def start_lint(templates: list[Path]) -> subprocess.Popen[str]:
    """cfn-lint in a session of its own: an interrupt reaches only this step, which stops it (`lint_all`)."""
    return subprocess.Popen(
        [str(CFN_LINT), *map(str, templates)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def lint_all(groups: list[list[Path]]) -> list[subprocess.CompletedProcess[str]]:
    """Each group by one cfn-lint process, side by side; interrupted, every one is stopped before the interrupt goes
    on (ops/operations/interrupts.py: `make synth`'s line, exit 130)."""
    running: list[subprocess.Popen[str]] = []
    readers = ThreadPoolExecutor(max_workers=PROCESSES)  # each process's two pipes read to their end
    try:
        for group in groups:
            with interrupt_held_while_starting():  # a cfn-lint started is one in `running`, to be stopped
                running.append(start_lint(group))
        outputs = list(readers.map(lambda process: process.communicate(), running))
    except KeyboardInterrupt:
        for process in running:  # before the readers are waited for: they end with the processes
            stop_group(process)
        raise
    finally:
        readers.shutdown()
    return [
        subprocess.CompletedProcess(process.args, process.returncode, out, err)
        for process, (out, err) in zip(running, outputs, strict=True)
    ]


def main(argv: list[str] | None = None) -> int:
    templates = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    keys = {template: pass_key(template) for template in templates if template.is_file()}  # cfn-lint names the rest
    to_lint = [t for t in templates if t not in keys or not (PASSED_DIR / keys[t]).exists()]
    if len(to_lint) < len(templates):
        print(
            f"cfn-lint: {len(templates) - len(to_lint)} template(s) unchanged since cfn-lint {version('cfn-lint')} passed them"
        )
    groups = [to_lint[i::PROCESSES] for i in range(PROCESSES) if to_lint[i::PROCESSES]]
    results = lint_all(groups)
    status = 0
    for group, result in zip(groups, results, strict=True):
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        status |= result.returncode  # cfn-lint's codes are bits: error 2, warning 4, info 8
        if result.returncode == 0:
            PASSED_DIR.mkdir(parents=True, exist_ok=True)
            for template in (t for t in group if t in keys):
                (PASSED_DIR / keys[template]).touch()
    return status


if __name__ == "__main__":
    entry_point(
        main, "cfn-lint: interrupted; the templates in cdk.out/all are not all checked (`make cfn-lint` checks them)"
    )
