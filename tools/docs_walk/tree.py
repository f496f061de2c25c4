"""The walk's fresh copy of the repository: what a new user has after `git clone`, plus the toolchain.

The tracked files of the checkout as they are in its work tree (uncommitted edits included, so a change is
walked before it is committed), in a temporary directory. `.venv` and `node_modules` are links to the
checkout's (installing them again takes minutes and is not what is walked); the files `make deps` compares with
their install stamps get the stamps' dates, so the links are never reinstalled through. The copy's own
`.sandbox/` is the temporary state directory of its sandbox, `cdk.out/` its templates, and TMPDIR points inside
it so `bin/ops`'s state directory (tempfile.gettempdir()/mangaassist-ops) is the walk's own too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# What `make deps` compares with the install stamps (Makefile: $(VENV)/.installed, node_modules/.installed).
DEPENDENCY_FILES = ("requirements.txt", "requirements-dev.txt", "package.json", "package-lock.json")
TOOLCHAIN = (".venv", "node_modules")


def tracked_files(checkout: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=checkout, check=True, capture_output=True,
    ).stdout.decode()  # fmt: skip
    return [name for name in listed.split("\0") if name and (checkout / name).is_file()]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_tree(checkout: Path, destination: Path) -> Path:
    """`destination`/repo: a clone of the checkout (its objects shared, its branch `main` as `main`, for
    `make review BASE=main`), the work tree's files over it, the toolchain linked; returns it."""
    tree = destination / "repo"
    git("clone", "--quiet", "--shared", "--no-checkout", str(checkout), str(tree), cwd=checkout)
    git("checkout", "--quiet", "--detach", git("rev-parse", "HEAD", cwd=checkout), cwd=tree)
    if main := subprocess.run(["git", "rev-parse", "--verify", "--quiet", "main"], cwd=checkout,
                              capture_output=True, text=True).stdout.strip():  # fmt: skip
        git("branch", "--force", "main", main, cwd=tree)
    for name in git("ls-files", "--deleted", cwd=checkout).splitlines():
        (tree / name).unlink(missing_ok=True)
    for name in tracked_files(checkout):
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(checkout / name, target)  # modes kept: bin/ops stays executable
    for name in TOOLCHAIN:
        (tree / name).symlink_to((checkout / name).resolve())
    stamp = (checkout / ".venv" / ".installed").stat().st_mtime
    for name in DEPENDENCY_FILES:
        os.utime(tree / name, (stamp, stamp))
    (destination / "tmp").mkdir()
    return tree
