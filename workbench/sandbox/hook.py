"""What the ops CLI does differently in the sandbox: the runtime hook `make sandbox` exports
(`MANGAASSIST_RUNTIME_HOOK=workbench.sandbox.hook`; the seam is ops/operations/runtime_hook.py).

`eval "$(make -s sandbox)"` points every AWS client at a local moto server (`AWS_ENDPOINT_URL`, a
variable botocore reads itself), names the environment the sandbox stands in for (`MANGAASSIST_SANDBOX`)
and this hook. Then:

* the variables outlive the sandbox: after `make sandbox-stop` a command would retry the closed port
  for ~19 s (adaptive retries, 10 attempts, ops/operations/aws.py) and blame the network. `require_running`
  tries one TCP connection first and says at once that the sandbox is stopped;
* `bin/ops deploy` deploys into the sandbox (`python -m workbench.sandbox deploy`), never with `make deploy`;
* nothing serves users, so the canary guard's evidence (invocations, streams for the TTFT comparison)
  comes from `python -m workbench.sandbox traffic`, which a refusal for want of it names (`evidence_hint`);
* the sandbox's clock is not the environment's users' clock: a deploy into it is not judged against
  the peak windows unless `MANGAASSIST_SANDBOX_PEAK_WINDOWS=1` asks for it; it pages nobody and serves no
  users, so neither the paging destination nor an assumed capacity stops it;
* moto has no Bedrock import jobs, and the image stack is the sandbox's own seed.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from ops.operations.child_process import run_child
from ops.operations.errors import ExitCode, OpsError
from ops.operations.runtime_hook import VARIABLE as HOOK_VARIABLE
from ops.operations.runtime_hook import RuntimeHook

REPO = Path(__file__).resolve().parents[2]
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
    HOOK_VARIABLE,
)
HOOK_MODULE = "workbench.sandbox.hook"  # this module: what `make sandbox` exports as HOOK_VARIABLE
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


def sandbox_deploy(env_name: str, released: list[str]) -> int:
    """`make deploy` inside `make sandbox`: synth, then the sandbox moves the endpoint onto the result."""
    command = [sys.executable, "-m", "workbench.sandbox", "deploy", env_name] + (
        ["--released", ",".join(released)] if released else []
    )
    print(f"(in the sandbox: {as_typed(command)} instead of make deploy)", flush=True)
    return run_child(command, REPO)


def as_typed(command: list[str]) -> str:
    """A command as a reader at the repository root runs it (bin/ops runs from there): the interpreter
    relative to it, as the docs write sandbox commands (`.venv/bin/python -m workbench.sandbox ...`)."""
    interpreter = Path(command[0])
    if interpreter.is_absolute() and interpreter.is_relative_to(REPO):
        interpreter = interpreter.relative_to(REPO)
    return shlex.join([str(interpreter), *command[1:]])


class SandboxHook(RuntimeHook):
    """The sandbox's answers; outside it (no MANGAASSIST_SANDBOX), AWS's."""

    def before_session(self) -> None:
        require_running()

    def deployer(self) -> Callable[[str, list[str]], int] | None:
        return sandbox_deploy if sandbox_env() else None

    def deploy_command(self, env_name: str) -> str:
        # In the sandbox `bin/ops deploy` is the deploy (into the sandbox); `make deploy` would go to AWS.
        return f"bin/ops deploy {env_name}" if sandbox_env() else super().deploy_command(env_name)

    def image_stack_missing(self, env_name: str) -> str:
        if sandbox_env() is None:
            return super().image_stack_missing(env_name)
        return "restart the sandbox, which seeds it: `make sandbox-reset`"

    def peak_windows_skipped(self, env_name: str) -> str | None:
        return skips_peak_windows(env_name)

    def assumed_capacity_allowed(self, env_name: str) -> str | None:
        sandbox = sandbox_env()
        if sandbox is None:
            return None
        return f"sandbox ({SANDBOX_VARIABLE}={sandbox}): deploying on an assumed capacity is not refused here"

    def paging_skipped(self, env_name: str) -> str | None:
        if sandbox_env() != env_name:
            return None
        return f"not checked in the sandbox standing in for {env_name}"

    def evidence_hint(self, env_name: str, problems: Iterable[str], needed: int) -> str:
        return evidence_hint(env_name, problems, needed)

    def slow_metrics_hint(self) -> str:
        # moto's get_metric_data compares every stored datapoint with every period asked for (issue 53).
        if sandbox_env() is None:
            return ""
        return " A `make sandbox` that many sweeps filled answers slowly: `make sandbox-reset` starts it clean"

    def bedrock_import_refused(self) -> str | None:
        if sandbox_env() is None:
            return None
        return (
            "the sandbox has no Bedrock import jobs (moto implements none): there, --validate-only is as far as "
            "bedrock-import goes"
        )


HOOK = SandboxHook()
