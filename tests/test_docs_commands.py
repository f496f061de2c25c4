"""Every command the README and docs/ show works as printed from a fresh clone, without an activated venv.

A shell block (```bash, ```sh, ```shell, ```console) is all commands; in any other block a line
starting with `$ ` is one (the transcripts). Each command is checked against what it names: a
`make` target the Makefile defines, a `bin/` script that exists, a subcommand `bin/ops` has, a
module or script `.venv/bin/python` can run. A bare `python`, `pip`, `pytest`, `npx` or `cdk` is
refused: outside an activated virtualenv it is the machine's (or missing), and `python -m ops`
there is a ModuleNotFoundError.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import typer

from ops.commands.cli import app as ops_app

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_LANGUAGES = {"bash", "sh", "shell", "console"}
# Commands a reader runs from their own tools, not from this repository's toolchain.
EXTERNAL = {"git", "export", "unset", "cd", "eval", "source", "complete"}
NEEDS_VENV = {"python", "python3", "pip", "pip3", "pytest", "npx", "npm", "node", "cdk", "ruff", "cfn-lint"}


def shell_commands(text: str) -> list[tuple[int, str]]:
    """(line number, command line) of every command shown in `text`'s code blocks."""
    commands: list[tuple[int, str]] = []
    language: str | None = None
    pending = ""
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"^\s*```(\S*)", line)
        if fence:
            language = None if language is not None else fence.group(1).lower()
            continue
        if language is None:
            continue
        if language in SHELL_LANGUAGES:
            command = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        elif line.startswith("$ "):
            command = line[2:].split(" #", 1)[0].strip()
        else:
            continue
        if pending:
            command, pending = f"{pending} {command}", ""
        if command.endswith("\\"):
            pending = command[:-1].strip()
            continue
        if command:
            commands.append((number, command))
    return commands


def simple_commands(line: str) -> list[list[str]]:
    """`line` split at `&&`, `||`, `;` and `|`, each as words; `eval "$(...)"` gives its inner command."""
    inner = re.findall(r"\$\(([^()]*)\)", line)
    line = re.sub(r"\$\([^()]*\)", "SUBSTITUTED", line)
    parts = [part for chunk in [line, *inner] for part in re.split(r"&&|\|\||;|\|", chunk)]
    commands = []
    for part in parts:
        try:
            words = shlex.split(part)
        except ValueError:  # a quote opened in one part and closed in another: split plainly
            words = part.split()
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value before the command
            words.pop(0)
        if words:
            commands.append(words)
    return commands


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {match for match in re.findall(r"^([a-zA-Z][\w.-]*)\s*:(?!=)", text, flags=re.MULTILINE)}


def ops_subcommands() -> set[str]:
    return set(typer.main.get_command(ops_app).commands)


def runnable_module(name: str) -> bool:
    if (ROOT / name.replace(".", "/") / "__main__.py").is_file() or (ROOT / f"{name.replace('.', '/')}.py").is_file():
        return True
    return importlib.util.find_spec(name) is not None


def problem(words: list[str]) -> str | None:
    """Why this command would not work as printed from a fresh clone, or None."""
    program, args = words[0], words[1:]
    if program == "make":
        unknown = [a for a in args if not a.startswith("-") and "=" not in a and a not in make_targets()]
        return f"no make target {unknown}" if unknown else None
    if program.startswith("bin/"):
        if not (ROOT / program).is_file():
            return f"{program} does not exist"
        if program == "bin/ops" and args and not args[0].startswith("-") and args[0] not in ops_subcommands():
            return f"bin/ops has no command {args[0]!r} (it has {sorted(ops_subcommands())})"
        return None
    if program in {".venv/bin/python", ".venv-engine/bin/python"}:
        if args[:1] == ["-m"]:
            return None if runnable_module(args[1]) else f"no module {args[1]} to run"
        return None if args and (ROOT / args[0]).is_file() else f"no script {args[:1]}"
    if program in NEEDS_VENV:
        return f"bare `{program}` needs an activated virtualenv: write `.venv/bin/python -m …`, `bin/ops` or `make …`"
    if program in EXTERNAL or program == "SUBSTITUTED":
        return None
    return f"`{program}` is not part of this repository's toolchain"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_command_shown_works_as_printed(document: Path) -> None:
    found = []
    for number, line in shell_commands(document.read_text()):
        for words in simple_commands(line):
            if reason := problem(words):
                found.append(f"{document.relative_to(ROOT)}:{number}: {line}\n    {reason}")
    assert not found, "\n".join(found)


def test_the_checker_refuses_what_does_not_work() -> None:
    """The rules above can fail: each of these is a command that would not work from a fresh clone."""
    text = "\n".join(
        [
            "```bash",
            "python -m ops status prod",
            "make synthesize",
            "bin/ops stauts prod",
            ".venv/bin/python -m no_such_module",
            "npx cdk deploy",
            "aws ecr put-image --repository-name x",
            "```",
            "```",
            "$ bin/nothing-here",
            "plain output, never checked",
            "```",
        ]
    )
    reasons = [problem(words) for _, line in shell_commands(text) for words in simple_commands(line)]
    assert len(reasons) == 7 and all(reasons), reasons
    good = '```bash\neval "$(make -s sandbox)"   # note\nbin/ops status prod && make plan ENV=prod\n```\n'
    assert [problem(words) for _, line in shell_commands(good) for words in simple_commands(line)] == [None] * 4
