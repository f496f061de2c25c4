"""One environment to operate on: its validated config and AWS clients for its region and account.

The emergency commands open it with `open_for_emergency`: an invalid config costs one line and they go on from
the endpoint's identity, so no config locks an operator out of a rollback. Other commands refuse it (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from config import ConfigError, EnvironmentConfig, UnknownEnvironment, load_environment
from config.endpoint_identity import EndpointIdentity, load_identity
from config.problems import shorten
from config.schema import UnknownVariant, Variant
from ops.operations.aws import AwsClients, check_account, open_session
from ops.operations.errors import ExitCode, OpsError

INVALID_PROBLEM_CHARS = 240  # the first problem, in the one line an emergency command prints


@dataclass(frozen=True)
class Environment:
    cfg: EnvironmentConfig
    clients: AwsClients

    @property
    def name(self) -> str:
        return self.cfg.name


@dataclass(frozen=True)
class EmergencyAccess:
    """The endpoint's identity and AWS clients, and the config when valid (`cfg` None: it failed validation)."""

    identity: EndpointIdentity
    clients: AwsClients
    cfg: EnvironmentConfig | None


def load_environment_config(env_name: str) -> EnvironmentConfig:
    """Validated, not compared with what was last deployed: a pending change must not hide status."""
    return load_environment(env_name, against_deployed=False)


def open_environment(
    env_name: str, region: str | None, client_overrides: dict[str, Any], variants: tuple[str, ...] = ()
) -> Environment:
    """Usage errors (unknown environment or variant, invalid config, no region) before any AWS call."""
    cfg = load_environment_config(env_name)
    for name in variants:
        config_variant(cfg, name)
    return connect(cfg, region, client_overrides)


def open_for_emergency(
    env_name: str,
    region: str | None,
    client_overrides: dict[str, Any],
    variants: tuple[str, ...],
    say: Callable[[str], None],
) -> EmergencyAccess:
    """As `open_environment`, but an invalid config costs one line through `say` and the command goes on from
    the endpoint's identity (refused only when the identity is invalid or the environment unknown)."""
    cfg: EnvironmentConfig | None
    try:
        cfg = load_environment_config(env_name)
        identity = EndpointIdentity.of(cfg)
    except UnknownEnvironment:
        raise
    except ConfigError as error:
        identity = load_identity(env_name)
        say(invalid_config_line(error, identity))
        cfg = None
    for name in variants:
        if name not in identity.variant_names:
            known = identity.variant_names
            raise OpsError(
                f"{UnknownVariant(env_name, name, known).message}: check --primary/--canary/--variant", ExitCode.USAGE
            )
    clients = AwsClients(open_session(identity.region, region), client_overrides)
    check_account(clients, identity.account, identity.name)
    return EmergencyAccess(identity, clients, cfg)


def invalid_config_line(error: ConfigError, identity: EndpointIdentity) -> str:
    """'warning: config/environments/prod.yaml is invalid (FIELD: MESSAGE; 2 more problems): going on …'."""
    path, message = error.problems[0]
    more = len(error.problems) - 1
    others = f"; {more} more problem{'s' if more > 1 else ''}" if more else ""
    first = shorten(" ".join(f"{path}: {message}".split()), INVALID_PROBLEM_CHARS)
    return (
        f"warning: {error.source} is invalid ({first}{others}): going on with the endpoint's identity alone "
        f"({identity.endpoint_name}, variants {', '.join(identity.variant_names)}); shift, promote, capacity and "
        "deploy refuse until it is fixed"
    )


def connect(cfg: EnvironmentConfig, region: str | None, client_overrides: dict[str, Any]) -> Environment:
    clients = AwsClients(open_session(cfg.region, region), client_overrides)
    check_account(clients, cfg.account, cfg.name)
    return Environment(cfg, clients)


def config_variant(cfg: EnvironmentConfig, name: str) -> Variant:
    try:
        return cfg.variant(name)
    except UnknownVariant as error:
        raise OpsError(f"{error.message}: check --primary/--canary/--variant", ExitCode.USAGE) from None
