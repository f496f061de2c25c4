"""Per-environment configuration: typed, validated at synth time, one YAML file per environment."""

from config.toolchain import use_pinned_node

use_pinned_node()  # before anything here imports aws_cdk (jsii starts Node at that import)

from config.loader import (  # noqa: E402
    ConfigError,
    UnknownEnvironment,
    environment_file,
    known_environments,
    load_catalog,
    load_config_file,
    load_environment,
)
from config.naming import environment_label  # noqa: E402
from config.schema import EnvironmentConfig  # noqa: E402

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
