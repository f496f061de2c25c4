"""The docs stay true to the code they describe: every field of the environment config is named in
docs/reference/configuration.md, every option a command's reference names is one the CLI takes, and
every relative link in README.md and docs/ reaches an existing file and heading."""

from __future__ import annotations

import re
import subprocess
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from config.schema import EnvironmentConfig

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every field of `model` and of the models it holds, dotted (`container.drain_seconds`)."""
    found = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        found.append(path)
        for inner in nested_models(field.annotation):
            found += fields(inner, f"{path}.")
    return found


def nested_models(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in nested_models(argument)]


def test_every_config_field_is_in_the_reference() -> None:
    text = (ROOT / "docs" / "reference" / "configuration.md").read_text()
    named = set(re.findall(r"`([\w.]+)`", text))
    missing = [path for path in fields(EnvironmentConfig) if path.rsplit(".", 1)[-1] not in named]
    assert not missing, f"docs/reference/configuration.md does not name: {', '.join(missing)}"


def test_the_field_lookup_finds_nested_fields() -> None:
    found = fields(EnvironmentConfig)
    assert "container.drain_seconds" in found
    assert "variants.instance_type" in found


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#+ (.*)", line)):
            found.add(anchor(match.group(1)))
    return found


def links(path: Path) -> list[str]:
    """The relative link targets in `path`, outside code blocks."""
    found, fenced = [], False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            found += [t for t in LINK.findall(line) if not re.match(r"^[a-z]+:", t)]
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in links(document):
        path, _, fragment = target.partition("#")
        file = (document.parent / path).resolve() if path else document
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading #{fragment} in {file.relative_to(ROOT)}")
    assert not broken, f"{document.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_sees_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [bad](#nowhere)\n```\n[not a link](missing.md)\n```\n")
    assert links(page) == ["#title", "#nowhere"]
    assert anchors(page) == {"title"}


COMMANDS = ROOT / "docs" / "reference" / "commands.md"


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of any level."""
    start = text.index(heading + "\n") + len(heading) + 1
    following = re.search(r"^#+ ", text[start:], re.MULTILINE)
    return text[start : start + following.start()] if following else text[start:]


def option_cells(text: str) -> set[str]:
    """The options an options table names in its first column (`--deploy`, `--no-deploy`)."""
    cells = re.findall(r"^\| (`--[^|]*)\|", text, re.MULTILINE)
    return {option for cell in cells for option in re.findall(r"`(--[\w-]+)`", cell)}


def ops_commands() -> dict[str, list[str]]:
    """Each `bin/ops` subcommand with the options it takes (as its --help shows them)."""
    import typer

    from ops.commands.cli import app

    group = typer.main.get_command(app)
    return {
        name: [opt for p in command.params if type(p).__name__.endswith("Option") for opt in p.opts + p.secondary_opts]
        for name, command in group.commands.items()
    }


def test_every_ops_command_and_option_is_in_the_reference_and_no_other() -> None:
    text = COMMANDS.read_text()
    problems = []
    for name, options in ops_commands().items():
        heading = f"### `bin/ops {name}`"
        if heading not in text:
            problems.append(f"no section {heading}")
            continue
        named = option_cells(section(text, heading))
        taken = {o for o in options if o != "--help"}
        problems += [f"{name}: {o} not documented" for o in sorted(taken - named)]
        problems += [f"{name}: {o} documented but not an option" for o in sorted(named - taken)]
    assert not problems, "; ".join(problems)


def test_bin_plan_options_in_the_reference_are_the_planners() -> None:
    help_text = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "workbench.planner", "plan", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    taken = set(re.findall(r"^\s+(--[\w-]+)", help_text, re.MULTILINE)) - {"--help"}
    named = option_cells(section(COMMANDS.read_text(), "## `bin/plan`"))
    assert named == taken


def test_the_make_help_shown_is_make_helps_output() -> None:
    shown = re.search(r"`make help` prints this list.*?```text\n(.*?)```", COMMANDS.read_text(), re.S).group(1)
    printed = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, check=True).stdout
    assert shown == printed


CODE_FOLDERS = ("README.md", "docs", "app.py", "config", "constructs", "stacks", "container", "ops", "workbench", "Makefile", ".github", "bin")


def test_every_doc_path_the_code_names_exists_with_its_heading() -> None:
    """Error texts, --help and comments point readers at `docs/X.md "Heading"`: both must exist."""
    files = subprocess.run(["git", "ls-files", *CODE_FOLDERS], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    broken = set()
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".py", ".yml", ".yaml", ".md", ""}:
            continue
        for doc, heading in re.findall(r"(docs/[\w/-]+\.md)(?:,? \"([^\"\n]+)\")?", path.read_text(errors="replace")):
            target = ROOT / doc
            if not target.exists():
                broken.add(f"{name}: {doc}")
            elif heading and not any(a.startswith(anchor(heading)) for a in anchors(target)):
                broken.add(f'{name}: {doc} "{heading}"')
    assert not broken, "; ".join(sorted(broken))
