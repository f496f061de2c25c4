"""The docs walk's own parts (tools/docs_walk), fast: what makes a command fail, Ctrl-C as a terminal sends it
to real processes, the exports of `eval "$(make -s sandbox)"`, normalising and placing the transcripts. The
walk itself (`make docs-walk`) runs every printed command against a sandbox and is no test tier."""

from __future__ import annotations

import sys
from pathlib import Path

from tools.docs_walk import findings, run, transcript
from tools.docs_walk.steps import Step

PYTHON = sys.executable


def result(output: str, exit_status: int = 0, interrupted_output: str | None = None) -> run.Result:
    return run.Result("x", exit_status, 1.0, 0.5, output, interrupted_output)


def test_a_traceback_raw_html_or_another_exit_status_fails_the_step() -> None:
    step = Step("bin/ops scaling-history prod")
    assert findings.problems(step, result("fine\n"), interrupted=False) == []
    traceback = 'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\nValueError: no\n'
    assert "a traceback" in findings.problems(step, result(traceback), interrupted=False)[0]
    html = "error: DescribeScalingActivities failed (500): <!doctype html>\n<title>500</title>\n"
    assert "raw HTML" in findings.problems(step, result(html), interrupted=False)[0]
    assert findings.problems(step, result("", exit_status=4), interrupted=False) == ["exit status 4, expected 0"]


def test_ctrl_c_must_be_exit_130_and_one_line() -> None:
    step = Step("bin/ops shift prod --canary-weight 100 --hold 30m")
    one = "error: interrupted: stands at canary 25%\n  resume:    bin/ops shift …\n  roll back: bin/ops rollback prod\n"
    assert findings.problems(step, result("before\n" + one, 130, one), interrupted=True) == []
    assert findings.problems(step, result(one, 1, one), interrupted=True) == ["Ctrl-C: exit status 1, expected 130"]
    two = "error: interrupted\nerror: again\n"
    assert "Ctrl-C: 2 lines" in findings.problems(step, result(two, 130, two), interrupted=True)[0]
    silent = findings.problems(step, result("", 130, ""), interrupted=True)
    assert silent and "0 lines" in silent[0]
    assert findings.problems(step, result("done\n", 0, None), interrupted=True) == [
        "ended (exit 0) before it could be interrupted"
    ]


def test_makes_own_interrupt_report_counts_only_under_a_make_target() -> None:
    said = "make synth: interrupted\nmake: *** [Makefile:72: synth] Error 130\n"
    assert findings.problems(Step("make synth"), result(said, 130, said), interrupted=True) == []
    nested = "make: *** [Makefile:71: synth] Terminated\nerror: interrupted\n"
    assert findings.problems(Step("bin/ops deploy prod"), result(nested, 130, nested), interrupted=True)


def test_pytests_interrupt_summary_is_a_test_runners_report_and_a_traceback_still_fails() -> None:
    """What `make test` prints on Ctrl-C (tools/docs_walk/steps.py: test_runner): pytest's three lines are its
    report; a traceback from anything it ran (jsii's Node relayed as b'...' lines, an exit hook) still fails."""
    summary = (
        "....\n" + "!" * 20 + " KeyboardInterrupt " + "!" * 20 + "\n"
        "/usr/lib/python3.11/threading.py:331: KeyboardInterrupt\n"
        "(to show a full traceback on KeyboardInterrupt use --full-trace)\n481 passed in 42.61s\n"
        "make: *** [Makefile:225: test] Error 2\n"
    )
    runner = Step("make test", test_runner=True)
    assert findings.problems(runner, result(summary, 130, summary[5:]), interrupted=True) == []
    assert findings.problems(Step("make synth"), result(summary, 130, summary[5:]), interrupted=True)
    hook = (
        "Exception ignored in atexit callback: <bound method _NodeProcess.stop>\nTraceback (most recent call last):\n"
    )
    node = "b'Traceback (most recent call last):\\n'\nb'KeyboardInterrupt\\n'\n"
    for traceback in (hook, node):
        said = traceback + summary
        assert "a traceback" in findings.problems(runner, result(said, 130, said), interrupted=True)[0]


def test_ctrl_c_reaches_the_whole_process_group_as_a_terminal_sends_it(tmp_path: Path) -> None:
    """A real child: Python's default SIGINT is a KeyboardInterrupt traceback, which the walk reports; a program
    that handles it in one line passes."""
    sleeper = f"{PYTHON} -c \"import time; print('ready', flush=True); time.sleep(60)\""
    rough = run.run_interrupted(sleeper, tmp_path, {"PATH": "/usr/bin:/bin"}, 30, r"^ready")
    assert rough.exit_status == 130 and rough.seconds < 30
    assert any("a traceback" in p for p in findings.problems(Step(sleeper), rough, interrupted=True))
    handled = (
        f"{PYTHON} -c \"import sys, time\nprint('ready', flush=True)\ntry: time.sleep(60)\n"
        "except KeyboardInterrupt: print('error: interrupted', file=sys.stderr); sys.exit(130)\""
    )
    clean = run.run_interrupted(handled, tmp_path, {"PATH": "/usr/bin:/bin"}, 30, r"^ready")
    assert (clean.exit_status, clean.interrupted_output) == (130, "error: interrupted\n")
    assert findings.problems(Step(handled), clean, interrupted=True) == []


def test_the_sandboxs_exports_apply_as_eval_would() -> None:
    env = {"AWS_PROFILE": "me", "PATH": "/bin"}
    run.apply_exports(
        "# sandbox for prod\nexport AWS_ENDPOINT_URL=http://127.0.0.1:4000\nexport MANGAASSIST_SANDBOX=prod\n"
        "unset AWS_PROFILE AWS_DEFAULT_PROFILE\n",
        env,
    )
    assert env == {"PATH": "/bin", "AWS_ENDPOINT_URL": "http://127.0.0.1:4000", "MANGAASSIST_SANDBOX": "prod"}


def test_normalising_masks_what_differs_between_runs_and_keeps_columns(tmp_path: Path) -> None:
    tree, tmp = tmp_path / "repo", tmp_path / "tmp"
    text = (
        f"moto at http://127.0.0.1:41471\nsnapshot {tmp}/mangaassist-ops/scaling-x-20261127T055658Z.json\n"
        f"wrote {tree}/week.csv\n  last modified: 2026-11-27 06:49 CET\n"
        "  manga  invoke  canary   207 ms   -       64      ok   \n"
        "  schedule x: Asia/Tokyo, 17:30 there = 09:30 CET here\n"
        "(Error Code: ResourceLimitExceeded; Request ID: 7a14d524-c442-4daa-b778-71b85905681f).\n"
    )
    assert transcript.normalise(text, tree, tmp).splitlines() == [
        "moto at http://127.0.0.1:<port>",
        "snapshot /tmp/mangaassist-ops/scaling-x-YYYYMMDDThhmmssZ.json",
        "wrote week.csv",
        "  last modified: YYYY-MM-DD hh:mm CET",
        "  manga  invoke  canary   N ms     -       64      ok",
        "  schedule x: Asia/Tokyo, 17:30 there = 09:30 CET here",
        "(Error Code: ResourceLimitExceeded; Request ID: <request-id>).",
    ]


def test_writing_replaces_only_the_named_blocks(tmp_path: Path) -> None:
    document = tmp_path / "doc.md"
    old = transcript.block("status", ["$ bin/ops status prod\nold\n# exit status 0"])
    kept = transcript.block("smoke", ["$ bin/ops smoke prod\nkept\n# exit status 0"])
    document.write_text(f"intro\n\n{old}\n\nmiddle\n\n{kept}\n")
    new = transcript.block("status", ["$ bin/ops status prod\nnew\n# exit status 0"])
    assert transcript.write([document], {"status": new, "absent": "x"}) == {"status": document}
    assert document.read_text() == f"intro\n\n{new}\n\nmiddle\n\n{kept}\n"
    assert set(transcript.blocks_in(document.read_text())) == {"status", "smoke"}
