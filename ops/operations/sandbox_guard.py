"""What the ops CLI does differently while `make sandbox`'s variables are exported (workbench/sandbox/cli.py).

`eval "$(make -s sandbox)"` points every AWS client at a local moto server (`AWS_ENDPOINT_URL`, a
variable botocore reads itself) and names the environment the sandbox stands in for
(`MANGAASSIST_SANDBOX`). Then:

* the variables outlive the sandbox: after `make sandbox-stop` a command would retry the closed port
  for ~19 s (adaptive retries, 10 attempts, ops/operations/aws.py) and blame the network. `require_running` tries
  one TCP connection first and says at once that the sandbox is stopped;
* nothing serves users, so the canary guard's evidence (invocations, streams for the TTFT comparison)
  comes from `python -m workbench.sandbox traffic`, which a refusal for want of it names (`evidence_hint`);
* the sandbox's clock is not the environment's users' clock: a deploy into it is not judged against
  the peak windows unless `MANGAASSIST_SANDBOX_PEAK_WINDOWS=1` asks for it (`skips_peak_windows`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from ops.operations.errors import ExitCode, OpsError

SANDBOX_VARIABLE = "MANGAASSIST_SANDBOX"  # the environment the sandbox stands in for
PEAK_WINDOWS_VARIABLE = "MANGAASSIST_SANDBOX_PEAK_WINDOWS"  # =1: judge sandbox deploys by the peak windows
# What `make sandbox` exports (workbench/sandbox/server.py State.exports, workbench/sandbox/cli.py print_exports).
EXPORTED = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    SANDBOX_VARIABLE,
)
CONNECT_SECONDS = 0.5  # a local port: refused at once when nothing listens
# How ops/operations/guard.py starts the refusals for want of evidence: too few canary invocations, too few
# streams on either variant to compare time to first token.
EVIDENCE_PROBLEMS = ("not enough evidence", "TTFT not compared")
DEFAULT_STREAMS = 100  # `python -m workbench.sandbox traffic --streams`


def sandbox_env() -> str | None:
    """The environment the exported sandbox stands in for, or None outside the sandbox."""
    return os.environ.get(SANDBOX_VARIABLE) or None


def start_command(env_name: str) -> str:
    suffix = "" if env_name == "prod" else f" ENV={env_name}"
    return f'eval "$(make -s sandbox{suffix})"'


def require_running() -> None:
    """Refuse (exit 2) at once when the sandbox's variables point at a sandbox that is not running."""
    env_name, url = sandbox_env(), os.environ.get("AWS_ENDPOINT_URL")
    if env_name is None or not url:
        return
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=CONNECT_SECONDS).close()
    except (OSError, ValueError):
        raise OpsError(
            f"the sandbox for {env_name} is stopped: nothing answers at {url} (AWS_ENDPOINT_URL, exported by "
            f"`make sandbox`): start it with `{start_command(env_name)}`, or leave it with "
            f"`unset {' '.join(EXPORTED)}`",
            ExitCode.USAGE,
        ) from None


def evidence_hint(env_name: str, problems: Iterable[str], needed: int = 100) -> str:
    """In the sandbox, what to run before a shift refused for want of evidence; '' otherwise."""
    if sandbox_env() is None or not any(problem.startswith(EVIDENCE_PROBLEMS) for problem in problems):
        return ""
    streams = "" if needed == DEFAULT_STREAMS else f" --streams {needed}"
    return (
        f" (in the sandbox nothing serves users: run their traffic first, `.venv/bin/python -m workbench.sandbox traffic "
        f"{env_name} --per-minute N{streams}` with N × the canary's share at least {needed}, e.g. N=2400 at 5 %; "
        f"it streams {needed} requests to each variant for the TTFT comparison; for a ramp with holds, add "
        f"--follow in another terminal)"
    )


def skips_peak_windows(env_name: str) -> str | None:
    """In the sandbox, the note that replaces the peak-window check; None when the check applies."""
    sandbox = sandbox_env()
    if sandbox is None or os.environ.get(PEAK_WINDOWS_VARIABLE) == "1":
        return None
    return (
        f"sandbox ({SANDBOX_VARIABLE}={sandbox}): the peak windows of {env_name} are not checked, the sandbox "
        f"serves no users; to check them as on AWS: {PEAK_WINDOWS_VARIABLE}=1"
    )
