"""One environment to operate on: its validated config and AWS clients for its region and account."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import EnvironmentConfig, known_environments, load_config_file
from config import loader as config_loader
from config.schema import Variant
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
    """The environment's validated config, read like `config.load_config` but without comparing it to
    what was last deployed: that comparison stops synth from attempting the changes `ops deploy` is
    there to carry out, and it must not stop an operator from reading status while one is pending."""
    known = known_environments()
    if env_name not in known:
        raise OpsError(f"unknown environment '{env_name}'; known: {', '.join(known)}", ExitCode.USAGE)
    return load_config_file(environment_file(env_name), env_name)


def environment_file(env_name: str) -> Path:
    return config_loader.ENVIRONMENTS_DIR / f"{env_name}.yaml"


def open_environment(
    env_name: str, region: str | None, client_overrides: dict[str, Any], variants: tuple[str, ...] = ()
) -> Environment:
    """Usage errors (unknown environment or variant, invalid config, no region) before any AWS call."""
    cfg = load_environment_config(env_name)
    for name in variants:
        config_variant(cfg, name)
    clients = AwsClients(open_session(cfg.region, region), client_overrides)
    check_account(clients, cfg.account, env_name)
    return Environment(cfg, clients)


def config_variant(cfg: EnvironmentConfig, name: str) -> Variant:
    for variant in cfg.variants:
        if variant.name == name:
            return variant
    known = ", ".join(v.name for v in cfg.variants)
    raise OpsError(
        f"config/environments/{cfg.name}.yaml has no variant '{name}' (it has: {known}): check --primary/--canary/--variant",
        ExitCode.USAGE,
    )
