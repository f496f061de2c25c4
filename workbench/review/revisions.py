"""The two sides of a review as cloud assemblies: BASE exported from git, HEAD from the working tree.

BASE is written out with `git archive` into a temporary directory, so the working tree (and its
index, and other worktrees) are never touched; it is synthesised there with its own config, catalog
and `config/deployed/` records, but with this checkout's toolchain (.venv, node_modules), whose pins
may differ: `pin_differences` says so in the review.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CDK = ROOT / "node_modules" / ".bin" / "cdk"
# The same flags as `make synth`, so Metadata noise is equal on both sides (Makefile CDK_FLAGS).
CDK_FLAGS = ["--ci", "--no-notices", "--no-version-reporting", "--no-asset-metadata", "--no-path-metadata"]
PINS = ("requirements.txt", "requirements-dev.txt", "package-lock.json")


class RevisionError(Exception):
    pass


@dataclass(frozen=True)
class Assembly:
    """A synthesised revision: its cloud assembly directory, or why it did not synthesise."""

    label: str
    source: Path  # the app directory (for its config files)
    out: Path
    error: str | None = None

    def template(self, stack: str) -> Path | None:
        path = self.out / f"{stack}.template.json"
        return path if self.error is None and path.exists() else None


def tool_env() -> dict[str, str]:
    """The CDK CLI never needs AWS here; keep it from probing the instance metadata service."""
    return {
        **os.environ,
        "AWS_EC2_METADATA_DISABLED": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def resolve(rev: str, repo: Path = ROOT) -> str:
    """The commit `rev` names; a branch only fetched (a fresh clone on another branch) as origin/<rev>."""
    for candidate in (rev, f"origin/{rev}"):
        result = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"],
            cwd=repo, capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode == 0:
            return result.stdout.strip()
    raise RevisionError(
        f"BASE '{rev}' is not a commit here, nor is origin/{rev} (a shallow clone? `git fetch origin {rev}`)"
    )


def export(commit: str, dest: Path, repo: Path = ROOT) -> Path:
    """The tree of `commit` as plain files in `dest`, with this checkout's toolchain linked in."""
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=repo, capture_output=True)
    if archive.returncode != 0:
        raise RevisionError(f"git archive {commit} failed: {archive.stderr.decode().strip()}")
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(dest, filter="data")  # refuses links out of the export
    except tarfile.TarError as error:
        raise RevisionError(f"cannot export {commit}: {error}") from None
    for toolchain in (".venv", "node_modules"):
        (dest / toolchain).symlink_to(repo / toolchain, target_is_directory=True)
    return dest


def pin_differences(base_dir: Path, head_dir: Path = ROOT) -> list[str]:
    """Pin files that differ: BASE is synthesised with HEAD's toolchain all the same."""
    differ = []
    for name in PINS:
        base, head = base_dir / name, head_dir / name
        if (base.read_bytes() if base.exists() else None) != (head.read_bytes() if head.exists() else None):
            differ.append(name)
    return differ


def start_synth(app_dir: Path, out: Path, env: str) -> subprocess.Popen:
    """`cdk synth -c env=…` of one revision, in the background (BASE and HEAD run side by side). In a session of its
    own: a terminal's Ctrl-C reaches only the review, which stops it (workbench/review/cli.py `_synthesise`), instead of app.py
    printing a traceback into it while the review goes on removing the directory it writes to."""
    command = [str(CDK), "synth", *CDK_FLAGS, "--quiet", "-c", f"env={env}", "-o", str(out)]
    return subprocess.Popen(
        command, cwd=app_dir, env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip


def finish_synth(process: subprocess.Popen, label: str, app_dir: Path, out: Path) -> Assembly:
    _, stderr = process.communicate()
    if process.returncode != 0:
        lines = [line for line in stderr.splitlines() if line.strip()]
        return Assembly(label, app_dir, out, "\n".join(lines[-20:]) or f"cdk synth exited {process.returncode}")
    return Assembly(label, app_dir, out)
