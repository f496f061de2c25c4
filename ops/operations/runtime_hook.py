"""The one seam where the world the ops CLI acts on may differ from an AWS account.

`MANGAASSIST_RUNTIME_HOOK` names a module (`package.module`) whose `HOOK`, a RuntimeHook subclass, overrides
what differs; unset, every answer is AWS's. Where the calls go is botocore's business (`AWS_ENDPOINT_URL`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable

from ops.operations.errors import ExitCode, OpsError

VARIABLE = "MANGAASSIST_RUNTIME_HOOK"


class RuntimeHook:
    """Every behaviour a hook may supply, each returning what happens on AWS."""

    def before_session(self) -> None:
        """Before a command opens its AWS session: raise OpsError to refuse at once (a world not running)."""

    def deployer(self) -> Callable[[str, list[str]], int] | None:
        """The deploy `bin/ops deploy` runs, called (ENV, released variants) -> exit status; None: `make deploy`."""
        return None

    def deploy_command(self, env_name: str) -> str:
        """The deploy, as a message tells the operator to run it."""
        return f"make deploy ENV={env_name}"

    def image_stack_missing(self, env_name: str) -> str:
        """What to do when the image stack `release-tag` reads does not exist."""
        return f"deploy it with `make deploy-image ENV={env_name}` (or check --region / AWS_PROFILE)"

    def peak_windows_skipped(self, env_name: str) -> str | None:
        """A note said instead of judging a deploy against the peak windows; None: they are judged."""
        return None

    def assumed_capacity_allowed(self, env_name: str) -> str | None:
        """A note said instead of refusing a production deploy on an assumed capacity; None: refused."""
        return None

    def paging_skipped(self, env_name: str) -> str | None:
        """A note said instead of checking `make deploy`'s paging destination; None: checked."""
        return None

    def evidence_hint(self, env_name: str, problems: Iterable[str], needed: int) -> str:
        """Appended to a shift the guard refused: where the evidence comes from; '' on AWS (users' traffic)."""
        return ""

    def slow_metrics_hint(self) -> str:
        """Appended when GetMetricData did not answer in time (`bin/ops traffic`); '' on AWS."""
        return ""

    def bedrock_import_refused(self) -> str | None:
        """Why `bedrock-import` cannot submit an import job here (exit 2); None: it submits."""
        return None


AWS = RuntimeHook()


def runtime_hook() -> RuntimeHook:
    """The hook `MANGAASSIST_RUNTIME_HOOK` names, read at each call; AWS's behaviour when unset."""
    name = os.environ.get(VARIABLE, "").strip()
    if not name:
        return AWS
    allowed = f"a module importable from the repository whose HOOK is a RuntimeHook ({__name__}), or unset"
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise OpsError(f"{VARIABLE}={name}: cannot import it ({error}); it must be {allowed}", ExitCode.USAGE) from None
    hook = getattr(module, "HOOK", None)
    if not isinstance(hook, RuntimeHook):
        raise OpsError(f"{VARIABLE}={name}: its HOOK is {hook!r}; it must be {allowed}", ExitCode.USAGE)
    return hook
