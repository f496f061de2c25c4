"""The environment of a `python -m ops.pipeline.X ENV` program, or one line on stderr saying why there is none."""

from __future__ import annotations

import sys

from config import ConfigError, EnvironmentConfig, known_environments, load_environment
from ops.operations.errors import ExitCode, OpsError
from ops.operations.runtime_hook import RuntimeHook, runtime_hook

USAGE, REFUSED = ExitCode.USAGE, ExitCode.REFUSED  # ops' exit codes for the same refusals


def environment_or_say_why(env_name: str) -> EnvironmentConfig | None:
    if env_name not in known_environments():
        print(f"error: unknown environment '{env_name}'; known: {', '.join(known_environments())}", file=sys.stderr)
        return None
    try:
        return load_environment(env_name, against_deployed=False)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def hook_or_say_why() -> RuntimeHook | None:
    """The runtime hook, or None after one line on stderr when MANGAASSIST_RUNTIME_HOOK names no hook."""
    try:
        return runtime_hook()
    except OpsError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
