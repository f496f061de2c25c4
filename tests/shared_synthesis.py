"""Each environment's cloud assembly, synthesised once per test run and read by every pytest-xdist worker.

Synthesis is the slowest thing the suite does (building prod's construct tree over jsii and writing its
templates costs more than all its assertions), and each xdist worker is its own process with its own
jsii runtime. So the first worker that asks for an environment synthesises it into the run's shared
temporary directory while holding a file lock; the others wait on the lock and read the files.
The assembly is exactly what `app.synth()` writes for `cdk.App(context=cdk.json's context + env)` with the
environment's stacks built as app.py builds them (image, serving and access).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CDK_CONTEXT = json.loads((ROOT / "cdk.json").read_text())["context"]

# Set for the session by tests/conftest.py: the run's temporary directory every worker shares. Outside
# pytest (None), each process synthesises into a directory of its own.
shared_directory: Path | None = None


def share_between_workers(tmp_path_factory) -> None:  # noqa: ANN001 (pytest.TempPathFactory)
    """Under xdist a worker's basetemp is `<run dir>/popen-gwN`: the run dir is common to the workers
    of this run and to no other run (pytest-xdist docs, "Making session-scoped fixtures execute only once")."""
    global shared_directory
    basetemp = tmp_path_factory.getbasetemp()
    shared_directory = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def cloud_assembly(env_name: str) -> Path:
    """The directory holding env_name's synthesised templates and asset manifests."""
    if shared_directory is None:
        return _synthesise(env_name, Path(tempfile.mkdtemp(prefix=f"synth-{env_name}-")))
    target = shared_directory / f"synthesised-{env_name}"
    with open(shared_directory / f"synthesised-{env_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; a waiting worker then reads
        if not (target / "manifest.json").exists():
            shutil.rmtree(target, ignore_errors=True)  # a worker that failed midway left a partial one
            _synthesise(env_name, target)
    return target


def _synthesise(env_name: str, outdir: Path) -> Path:
    # Imported here: tests/conftest.py imports this module for every test, and only a synthesis needs jsii.
    import aws_cdk as cdk

    from config import load_environment
    from stacks.ci_access_stack import build_ci_access, served_resources
    from stacks.environment import build_environment

    app = cdk.App(context={**CDK_CONTEXT, "env": env_name}, outdir=str(outdir))
    cfg = load_environment(env_name)
    image, serving = build_environment(app, cfg)
    build_ci_access(app, cfg, served_resources(cfg, image, serving), serving)  # as app.py
    app.synth()
    return outdir
