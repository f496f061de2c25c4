"""Per-environment configuration: typed, validated at synth time, one YAML file per environment."""

from config.loader import ConfigError, known_environments, load_catalog, load_config, load_config_file
from config.schema import EnvironmentConfig

__all__ = ["ConfigError", "EnvironmentConfig", "known_environments", "load_catalog", "load_config", "load_config_file"]
