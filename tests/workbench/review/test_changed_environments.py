"""`python -m workbench.review.changed_environments BASE`: which environments' capacity plans a change can move."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from workbench.review.changed_environments import RevisionError, changed_paths, environments_moved, main

PROFILES = {"dev": None, "staging": "workbench/planner/reference_week.yaml", "prod": "traffic/prod-week.csv"}


@pytest.mark.parametrize(
    ("paths", "moved"),
    [
        (["config/environments/staging.yaml"], ["staging"]),
        (["config/environments/staging.yaml", "config/environments/prod.yaml"], ["staging", "prod"]),
        (["config/catalog.yaml"], ["dev", "staging", "prod"]),
        (["config/checks/scaling.py"], ["dev", "staging", "prod"]),
        (["workbench/planner/simulate.py"], ["dev", "staging", "prod"]),
        (["config/domain/workload.yaml"], ["dev", "staging", "prod"]),
        (["traffic/prod-week.csv"], ["prod"]),  # prod's planning.traffic.profile
        (["README.md", "ops/commands/cli.py", "config/deployed/prod.json", "constructs/alarm_topic.py"], []),
        (["config/environments/qa.yaml"], []),  # an environment that no longer exists
    ],
)
def test_what_moves_whose_plan(paths: list[str], moved: list[str]) -> None:
    assert list(environments_moved(paths, PROFILES)) == moved


def test_each_environment_names_the_file_that_moved_it() -> None:
    moved = environments_moved(["config/environments/prod.yaml", "workbench/planner/fleet.py"], PROFILES)
    assert moved == {"dev": "workbench/planner/fleet.py", "staging": "workbench/planner/fleet.py", "prod": "config/environments/prod.yaml"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose first commit has three files; returns it and that commit."""
    git(tmp_path, "init", "-q", "-b", "main")
    for name in ("config/environments/staging.yaml", "config/environments/prod.yaml", "README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"{name}\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path, git(tmp_path, "rev-parse", "HEAD")


def test_committed_uncommitted_renamed_and_untracked_changes_count(repository) -> None:
    root, base = repository
    (root / "README.md").write_text("changed\n")
    git(root, "commit", "-q", "-am", "readme")
    git(root, "mv", "config/environments/prod.yaml", "config/environments/production.yaml")
    (root / "config/environments/staging.yaml").write_text("edited, not committed\n")
    (root / "workbench/planner").mkdir(parents=True)
    (root / "workbench/planner/new.py").write_text("untracked\n")

    paths = changed_paths(base, root)

    assert sorted(paths) == [
        "README.md",
        "config/environments/prod.yaml",
        "config/environments/production.yaml",
        "config/environments/staging.yaml",
        "workbench/planner/new.py",
    ]


def test_nothing_changed_is_nothing(repository) -> None:
    root, base = repository
    assert changed_paths(base, root) == []


def test_an_unknown_base_is_refused_with_exit_2(repository, capsys) -> None:
    root, _ = repository
    with pytest.raises(RevisionError, match="BASE 'no-such-branch' is not a commit"):
        changed_paths("no-such-branch", root)

    assert main(["no-such-branch-here"]) == 2
    assert "error: BASE 'no-such-branch-here' is not a commit of this repository" in capsys.readouterr().err
    assert main([]) == 2
