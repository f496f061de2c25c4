"""`make synth`'s step (ops/pipeline/synth.py) and `make cfn-lint` (ops/pipeline/lint_templates.py) with the real
cfn-lint: templates swapped in only after a synth that succeeded, every template linted across the processes, and
Ctrl-C as a terminal sends it (SIGINT to the whole foreground group) one line, exit 130, no traceback, every
process it started ended. Before issue 53 item 7, an interrupted cfn-lint printed a 20-line traceback.

cfn-lint is held deterministically: its template is a FIFO nobody writes, so it waits in open(2) (fifo(7))."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ops.pipeline.lint_templates import shares
from tests.processes import alive, descendants, start_foreground_job

REPO = Path(__file__).resolve().parents[3]
PATIENCE_SECONDS = 60.0
GOOD = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
BAD = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"NoSuchProperty": 1}}}}
# Stands in for `cdk synth`: writes the templates given as JSON to the directory after -o.
WRITER = "import json, pathlib, sys; out = pathlib.Path(sys.argv[-1]); out.mkdir(); [(out / n).write_text(json.dumps(t)) for n, t in json.loads(sys.argv[1]).items()]"


def step(module: str, *args: str, cwd: Path) -> subprocess.Popen:
    return start_foreground_job(
        [sys.executable, "-m", module, *args],
        cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def synth(tmp_path: Path, templates: dict[str, dict]) -> subprocess.CompletedProcess:
    process = step("ops.pipeline.synth", "out", "--", sys.executable, "-c", WRITER, json.dumps(templates), cwd=tmp_path)
    out, errors = process.communicate(timeout=PATIENCE_SECONDS)
    return subprocess.CompletedProcess(process.args, process.returncode, out, errors)


def test_a_synth_that_succeeds_replaces_the_templates_and_every_one_is_linted(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.template.json").write_text("{}")
    names = [f"S{n}.template.json" for n in range(5)]
    done = synth(tmp_path, {name: GOOD for name in names})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["synthesised: " + " ".join(names), "cfn-lint: no errors in 5 templates"]
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == names
    assert not (tmp_path / "out.new").exists()


def test_a_finding_in_any_share_fails_the_step_and_names_the_template(tmp_path: Path) -> None:
    done = synth(tmp_path, {"A.template.json": GOOD, "B.template.json": GOOD, "C.template.json": BAD})
    assert done.returncode != 0
    assert "NoSuchProperty" in done.stdout and "C.template.json" in done.stdout
    assert "no errors" not in done.stdout


def test_a_failed_synth_leaves_the_last_templates(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "last.template.json").write_text("{}")
    process = step("ops.pipeline.synth", "out", "--", sys.executable, "-c", "raise SystemExit(3)", cwd=tmp_path)
    process.communicate(timeout=PATIENCE_SECONDS)
    assert process.returncode == 3
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["last.template.json"]


def test_the_shares_are_balanced_by_size(tmp_path: Path) -> None:
    sizes = {"serving-a": 140, "serving-b": 130, "image-a": 35, "image-b": 34, "access-a": 18, "access-b": 11}
    for name, size in sizes.items():
        (tmp_path / name).write_text("x" * size)
    dealt = shares([tmp_path / name for name in sizes])
    assert sorted(path.name for share in dealt for path in share) == sorted(sizes)
    assert [sum(sizes[path.name] for path in share) for share in dealt] == [185, 183]


def held(pid: int) -> dict[int, str]:
    return {child: command for child, command in descendants(pid).items() if "lint_templates" in command}


def test_ctrl_c_while_cfn_lint_runs_is_one_line_and_130(tmp_path: Path) -> None:
    for name in ("A.template.json", "B.template.json"):
        os.mkfifo(tmp_path / name)
    process = step("ops.pipeline.lint_templates", "A.template.json", "B.template.json", cwd=tmp_path)
    watchdog = threading.Timer(PATIENCE_SECONDS, lambda: os.killpg(process.pid, signal.SIGKILL))
    watchdog.start()
    try:
        while process.poll() is None and len(held(process.pid)) < 2:
            time.sleep(0.05)
        started = held(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        out, errors = process.communicate()
    finally:
        watchdog.cancel()
    assert len(started) == 2, out + errors
    assert (process.returncode, errors) == (130, "make cfn-lint: interrupted; the templates in cdk.out/all were not all linted\n")
    deadline = time.monotonic() + PATIENCE_SECONDS
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in started)  # not left waiting on their FIFOs


def test_ctrl_c_while_the_cdk_synthesises_is_one_line_and_keeps_the_last_templates(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    sleeper = "import pathlib, time; pathlib.Path('started').touch(); time.sleep(60)"
    process = step("ops.pipeline.synth", "out", "--", sys.executable, "-c", sleeper, cwd=tmp_path)
    while process.poll() is None and not (tmp_path / "started").exists():
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)  # the CLI is in a session of its own: the step stops it
    out, errors = process.communicate(timeout=PATIENCE_SECONDS)
    assert (process.returncode, errors) == (130, "make synth: interrupted; out keeps the last templates\n"), out
    assert (tmp_path / "out").is_dir() and not (tmp_path / "out.new").exists()
