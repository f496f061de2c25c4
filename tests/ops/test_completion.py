"""Shell completion offers the environments config/environments/ holds (`bin/ops --install-completion`)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ops.commands.cli import app

REPO = Path(__file__).resolve().parents[2]


def completions(*words: str) -> list[str]:
    """What bash completion gets for `ops WORDS…` (click's completion protocol, as the installed script asks)."""
    env = {"_OPS_COMPLETE": "complete_bash", "COMP_WORDS": " ".join(("ops", *words)), "COMP_CWORD": str(len(words))}
    return CliRunner().invoke(app, [], env=env, prog_name="ops").output.split()


def test_an_environment_argument_completes_to_the_known_environments() -> None:
    assert completions("status", "pr") == ["prod"]
    assert completions("rollback", "") == sorted(path.stem for path in (REPO / "config/environments").glob("*.yaml"))
