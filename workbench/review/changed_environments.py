"""`python -m workbench.review.changed_environments BASE`: the environments whose capacity plan the change from the git
revision BASE to the working tree can move, on one line, space-separated, in config order (the
pull-request workflow runs `make plan-diff` and `bin/plan` for each). Each one's reason goes to stderr.

What moves a plan is what the planner reads:
- `config/environments/<env>.yaml`: that environment;
- the file its `planning.traffic.profile` names: that environment;
- `config/catalog.yaml`, any `config/**/*.py`, anything under `workbench/planner/`, `config/domain/workload.yaml` (the
  physical ceiling, config/domain/physics.py) and `container/serving/contract.py` (read by config/schema.py):
  every environment.
An environment whose config does not load is judged by its file alone (its plan then says why it fails).
Exit 0, an empty line when none; 2 when BASE is not a revision of this repository.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from config import ConfigError, known_environments, load_environment
from config.naming import environment_label

ROOT = Path(__file__).resolve().parents[2]
EVERY_ENVIRONMENT = ("config/catalog.yaml", "config/domain/workload.yaml", "container/serving/contract.py")
EVERY_ENVIRONMENT_UNDER = ("workbench/planner/",)


def moves_every_plan(path: str) -> bool:
    return (
        path in EVERY_ENVIRONMENT
        or path.startswith(EVERY_ENVIRONMENT_UNDER)
        or (path.startswith("config/") and path.endswith(".py"))
    )


def environments_moved(paths: Iterable[str], traffic: Mapping[str, str | None]) -> dict[str, str]:
    """{environment: the first changed path that moves its plan}, in `traffic`'s order; `traffic` maps each
    environment to its planning.traffic.profile (None when its config does not load)."""
    paths = sorted(set(paths))
    moved = {}
    for env, profile in traffic.items():
        own = {environment_label(env), *([profile] if profile else [])}
        reason = next((p for p in paths if p in own or moves_every_plan(p)), None)
        if reason is not None:
            moved[env] = reason
    return moved


class RevisionError(Exception):
    pass


def changed_paths(base: str, root: Path = ROOT) -> list[str]:
    """Files that differ between `base` and the working tree (renames as a deletion and an addition),
    and untracked files, relative to `root`."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    try:
        git("rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    except subprocess.CalledProcessError:
        raise RevisionError(f"BASE '{base}' is not a commit of this repository (a branch, tag or SHA)") from None
    tracked = git("diff", "--name-only", "--no-renames", base, "--").splitlines()
    untracked = git("ls-files", "--others", "--exclude-standard").splitlines()
    return [*tracked, *untracked]


def traffic_profiles() -> dict[str, str | None]:
    profiles: dict[str, str | None] = {}
    for env in known_environments():
        try:
            profiles[env] = load_environment(env, against_deployed=False).planning.traffic.profile
        except ConfigError:
            profiles[env] = None
    return profiles


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m workbench.review.changed_environments BASE", file=sys.stderr)
        return 2
    try:
        paths = changed_paths(args[0])
    except RevisionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    moved = environments_moved(paths, traffic_profiles())
    for env, reason in moved.items():
        print(f"{env}: its plan can move ({reason} changed)", file=sys.stderr)
    print(" ".join(moved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
