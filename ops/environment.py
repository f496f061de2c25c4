"""One environment to operate on: its validated config and AWS clients for its region and account."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from config import EnvironmentConfig, load_environment
from config.schema import UnknownVariant, Variant
from ops.aws import AwsClients, check_account, open_session
from ops.errors import ExitCode, OpsError


@dataclass(frozen=True)
class Environment:
    cfg: EnvironmentConfig
    clients: AwsClients

    @property
    def name(self) -> str:
        return self.cfg.name


def load_environment_config(env_name: str) -> EnvironmentConfig:
    """The environment's validated config, not compared with what was last deployed (see
    `config.load_environment`): a pending change must not stop an operator from reading status."""
    return load_environment(env_name, against_deployed=False)


def open_environment(
    env_name: str, region: str | None, client_overrides: dict[str, Any], variants: tuple[str, ...] = ()
) -> Environment:
    """Usage errors (unknown environment or variant, invalid config, no region) before any AWS call."""
    cfg = load_environment_config(env_name)
    for name in variants:
        config_variant(cfg, name)
    return connect(cfg, region, client_overrides)


def connect(cfg: EnvironmentConfig, region: str | None, client_overrides: dict[str, Any]) -> Environment:
    """AWS clients for the config's region (or `region`), with the credentials' account checked."""
    clients = AwsClients(open_session(cfg.region, region), client_overrides)
    check_account(clients, cfg.account, cfg.name)
    return Environment(cfg, clients)


def config_variant(cfg: EnvironmentConfig, name: str) -> Variant:
    try:
        return cfg.variant(name)
    except UnknownVariant as error:
        raise OpsError(f"{error.message}: check --primary/--canary/--variant", ExitCode.USAGE) from None
