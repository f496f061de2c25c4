"""What makes a walked command fail: a traceback, raw HTML, an exit status other than expected, Ctrl-C that
takes more than one line (or is not exit 130), a command that had to be killed."""

from __future__ import annotations

import re

from tools.docs_walk.run import Result
from tools.docs_walk.steps import Step

TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"[^\"]+\", line \d+|KeyboardInterrupt|"
    r"^\s+at .+[(\s][^()\s]+:\d+:\d+\)?$|UnhandledPromiseRejection",
    re.MULTILINE,
)
# pytest's own summary of an interrupted run: its banner, where the main process was (one line, the traceback's
# last frame only) and how to see the rest. Under a test runner's step these are its report, not a traceback.
PYTEST_INTERRUPT = re.compile(
    r"^!+ KeyboardInterrupt !+$\n?|^\S+:\d+: KeyboardInterrupt$\n?|"
    r"^\(to show a full traceback on KeyboardInterrupt use --full-trace\)$\n?",
    re.MULTILINE,
)
# GNU make's own report that its recipe was interrupted (it always adds one); the command's line is the other one.
MAKE_REPORT = re.compile(r"^make(\[\d+\])?: \*\*\* \[[^]]*\] (Interrupt|Error 130)$")
RAW_HTML = re.compile(r"<!doctype|<html|<body|<head>|</(?:p|h1|h2|title|body|html)>", re.IGNORECASE)


def problems(step: Step, result: Result, interrupted: bool) -> list[str]:
    found = []
    if result.timed_out:
        found.append(f"still running after {result.seconds:.0f} s: killed")
    output = PYTEST_INTERRUPT.sub("", result.output) if step.test_runner and interrupted else result.output
    if trace := TRACEBACK.search(output):
        found.append(f"a traceback: {trace.group(0).strip()!r}")
    if html := RAW_HTML.search(result.output):
        found.append(f"raw HTML: {html.group(0)!r}")
    if interrupted:
        found.extend(
            _interrupt_problems(result, one_line=not step.test_runner, make_target=step.command.startswith("make "))
        )
    elif result.exit_status not in (step.expect if isinstance(step.expect, tuple) else (step.expect,)):
        found.append(f"exit status {result.exit_status}, expected {step.expect}")
    return found


def _interrupt_problems(result: Result, one_line: bool, make_target: bool) -> list[str]:
    if result.interrupted_output is None:
        return [f"ended (exit {result.exit_status}) before it could be interrupted"]
    found = []
    if result.exit_status != 130:
        found.append(f"Ctrl-C: exit status {result.exit_status}, expected 130")
    said = [
        line
        for line in result.interrupted_output.splitlines()
        if line.strip() and not (make_target and MAKE_REPORT.match(line))  # a make target's: make's own report
    ]
    unindented = [line for line in said if not line.startswith(" ")]
    if one_line and len(unindented) != 1:
        found.append(f"Ctrl-C: {len(unindented)} lines, expected one: {said[:6]!r}")
    return found
