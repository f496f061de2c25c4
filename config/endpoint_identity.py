"""An endpoint's identity, read from an environment's file even when the rest of it fails validation.

The emergency commands (`bin/ops rollback`, `status`, `restore-scaling`, `verify`) must not be locked
out by a config that synth refuses (a measurement that invalidates a target, a half-made edit): what
they need to reach the endpoint is its identity, the environment's name, the account and region it
lives in, the endpoint's name and its variants' names. Those fields alone are validated here, with the
schema's own field definitions (the same FieldInfo objects, so the two cannot drift) and the identity
checks of `config.checks.identity`; every other setting is ignored.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from config.checks.identity import check_region
from config.loader import (
    ConfigError,
    UnknownEnvironment,
    describe_error,
    display_path,
    environment_file,
    known_environments,
    read_yaml,
)
from config.problems import Problem, quote
from config.schema import EnvironmentConfig, Variant

_FIELDS = EnvironmentConfig.model_fields


class _VariantName(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Variant.model_fields["name"]


class EndpointIdentity(BaseModel):
    """Where the environment's endpoint is and what its variants are called."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = _FIELDS["name"]
    account: str | None = _FIELDS["account"]
    region: str | None = _FIELDS["region"]
    endpoint_name: str = _FIELDS["endpoint_name"]
    variants: list[_VariantName] = _FIELDS["variants"]

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    @classmethod
    def of(cls, cfg: EnvironmentConfig) -> EndpointIdentity:
        """The identity of a valid config."""
        return cls.model_validate(cfg.model_dump(include={"name", "account", "region", "endpoint_name", "variants"}))


def load_identity(env_name: str) -> EndpointIdentity:
    """The identity fields of config/environments/<env_name>.yaml, validated alone; ConfigError
    (UnknownEnvironment for a missing file) when they themselves are invalid."""
    known = known_environments()
    if env_name not in known:
        raise UnknownEnvironment(env_name, known)
    path = environment_file(env_name)
    source, raw = display_path(path), read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(source, [("(file)", f"must be a mapping of settings, got {quote(raw)}")])
    try:
        identity = EndpointIdentity.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(source, [describe_error(e, raw) for e in error.errors()]) from None
    problems: list[Problem] = check_region(identity)  # type: ignore[arg-type]  # reads .region only
    if identity.name != env_name:
        problems.append(("name", f"must match the file's environment '{env_name}', got {quote(identity.name)}"))
    if problems:
        raise ConfigError(source, problems)
    return identity
