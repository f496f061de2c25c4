"""Per-environment configuration: typed, validated at synth time, one YAML file per environment."""

from config.loader import (
    ConfigError,
    UnknownEnvironment,
    environment_file,
    known_environments,
    load_catalog,
    load_config_file,
    load_environment,
)
from config.naming import environment_label
from config.schema import EnvironmentConfig

__all__ = [
    "ConfigError",
    "UnknownEnvironment",
    "EnvironmentConfig",
    "known_environments",
    "load_catalog",
    "environment_file",
    "environment_label",
    "load_config_file",
    "load_environment",
]
