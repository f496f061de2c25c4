"""Per-environment configuration: typed, validated at synth time, one YAML file per environment."""

from config.toolchain import use_pinned_node

use_pinned_node()  # before anything here imports aws_cdk (jsii starts Node at that import)

from config.loader import (  # noqa: E402
    ConfigError,
    known_environments,
    load_catalog,
    load_config,
    load_config_file,
)
from config.schema import EnvironmentConfig  # noqa: E402

__all__ = ["ConfigError", "EnvironmentConfig", "known_environments", "load_catalog", "load_config", "load_config_file"]
