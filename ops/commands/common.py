"""What every `bin/ops` command shares: the app, the `Runtime` tests replace, one-line errors with
documented exit codes, the common arguments. Command modules import this, never cli.py.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Annotated, Any

import typer

from config.loader import known_environments
from ops.operations import interrupts
from ops.operations.deploy import Deployer, make_deploy
from ops.operations.environment import EmergencyAccess, Environment, open_environment, open_for_emergency
from ops.operations.errors import EXPLAINED, explain_for_command
from ops.operations.runtime_hook import runtime_hook
from ops.operations.waiting import Timing

EXIT_CODES = """Exit codes: 0 ok; 1 other AWS error; 2 usage, unknown environment/variant, invalid config or no
region; 3 verify/smoke/artifact check failed; 4 refused by a guard (weights rolled back); 5 missing,
expired or wrong-account credentials, or access denied; 6 endpoint, stack or S3 prefix not found;
7 still throttled after retries; 8 a wait, deploy or import job failed (scaling restored); 9 scaling
could NOT be restored (act now); 130 interrupted (Ctrl-C), 143 stopped by SIGTERM, 129 by SIGHUP."""

app = typer.Typer(
    help=f"Day-two operations for the MangaAssist LLM endpoint (SageMaker, primary + canary).\n\n{EXIT_CODES}",
    no_args_is_help=True,
    add_completion=True,  # `bin/ops --install-completion` (bash, zsh, fish), or --show-completion to see it
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def default_deployer() -> Deployer:
    """`make deploy`, unless the runtime hook deploys otherwise (ops/operations/runtime_hook.py)."""
    return runtime_hook().deployer() or make_deploy


@dataclass
class Runtime:
    timing: Timing = field(default_factory=Timing)
    deployer: Deployer = field(default_factory=default_deployer)
    zone: tzinfo | None = None  # None: the machine's local zone
    state_dir: Path = Path(tempfile.gettempdir()) / "mangaassist-ops"  # scaling snapshots
    client_overrides: dict[str, Any] = field(default_factory=dict)
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))  # peak-window guard

    def open(self, env: str, region: str | None, variants: tuple[str, ...] = ()) -> Environment:
        """The environment's config (variants named on the command line checked first), then AWS."""
        return open_environment(env, region, self.client_overrides, variants)

    def open_for_emergency(self, env: str, region: str | None, variants: tuple[str, ...] = ()) -> EmergencyAccess:
        """For rollback, status, restore-scaling and verify: an invalid config is one line on stderr,
        and the command goes on from the endpoint's identity (ops.operations.environment.open_for_emergency)."""
        return open_for_emergency(env, region, self.client_overrides, variants, lambda line: typer.echo(line, err=True))


def runtime(ctx: typer.Context) -> Runtime:
    return ctx.obj if isinstance(ctx.obj, Runtime) else Runtime()


def reports_errors(command: Callable[..., None]) -> Callable[..., None]:
    """One line on stderr and a documented exit code instead of a traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except EXPLAINED as error:
            problem = explain_for_command(error, kwargs.get("ctx"))
            typer.echo(f"error: {problem}", err=True)
            raise typer.Exit(problem.exit_code) from None
        except KeyboardInterrupt as stop:  # typer would end it as a silent exit 130 (typer/core.py `_main`)
            env = kwargs.get("env") or "ENV"
            typer.echo(f"error: interrupted; nothing more was changed (see `bin/ops status {env}`)", err=True)
            raise typer.Exit(interrupts.exit_code(stop)) from None

    return run


def complete_environment(incomplete: str) -> list[str]:
    """Shell completion (`bin/ops --install-completion`): the environments config/environments/ holds."""
    return [name for name in known_environments() if name.startswith(incomplete)]


EnvArg = Annotated[
    str,
    typer.Argument(
        help="Environment: a file in config/environments/ (dev, staging, prod).", autocompletion=complete_environment
    ),
]
RegionOpt = Annotated[
    str | None,
    typer.Option(
        help="AWS region, for environments whose config has none (dev). Default: AWS_REGION or the profile's."
    ),
]
CanaryOpt = Annotated[str, typer.Option(help="Name of the canary variant.")]
PrimaryOpt = Annotated[str, typer.Option(help="Name of the primary variant.")]
DuringPeakOpt = Annotated[
    bool,
    typer.Option(
        "--during-peak",
        help="Deploy even when the blue/green update would overlap a scheduled peak window (autoscaling is "
        "blocked during an update).",
    ),
]
