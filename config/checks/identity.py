"""Which environment a file is: its name and Environment tag match the file, and where it deploys
(account and region together, a region aws-cdk-lib knows)."""

from __future__ import annotations

import difflib
import importlib.metadata
from functools import cache

from config.problems import Problem, quote, refuse
from config.schema import EnvironmentConfig
from config.sections import is_none, skip_invalid


def check_identity(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    return [
        *skip_invalid(_check_name, cfg, env_name),
        *skip_invalid(_check_environment_tag, cfg, env_name),
        *skip_invalid(_check_account_and_region, cfg),
    ]


def _check_name(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    if cfg.name != env_name:
        return [("name", f"must match the file's environment '{env_name}', got {quote(cfg.name)}")]
    return []


def _check_environment_tag(cfg: EnvironmentConfig, env_name: str) -> list[Problem]:
    if cfg.tags.Environment != env_name:
        return [("tags.Environment", f"must be the environment name '{env_name}', got {quote(cfg.tags.Environment)}")]
    return []


def _check_account_and_region(cfg: EnvironmentConfig) -> list[Problem]:
    if is_none(cfg.account) != is_none(cfg.region):
        return [("account", "set both account and region, or neither (environment-agnostic)")]
    return []


def check_region(cfg: EnvironmentConfig) -> list[Problem]:
    """A region aws-cdk-lib does not know fails synth inside jsii; refuse it here by name, from
    botocore's endpoint data (the same list: tests/stacks/test_region_list.py), so that loading a config
    never starts Node."""
    if is_none(cfg.region):
        return []
    known = known_regions()
    if cfg.region not in known:
        closest = ", ".join(difflib.get_close_matches(cfg.region, known, n=3)) or ", ".join(known[:3])
        return refuse(
            "region",
            f"not a region aws-cdk-lib {cdk_version()} knows (its table and botocore's endpoint data list the "
            f"same {len(known)}; closest: {closest}), got {quote(cfg.region)}",
        )
    return []


@cache
def known_regions() -> tuple[str, ...]:
    """Every region of every partition in botocore's endpoint data (botocore/data/endpoints.json,
    `partitions[].regions`: what `boto3.session.Session().get_available_regions` reads). It equals
    aws-cdk-lib's own fact table (`aws_cdk.region_info.RegionInfo.regions`), which a test holds; that
    table is only reachable through jsii, and jsii starts Node (~0.75 s) for every command that loads a
    config."""
    import botocore.loaders  # here: synth and the planner need it only when a config names a region

    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    return tuple(sorted(region for partition in endpoints["partitions"] for region in partition["regions"]))


def cdk_version() -> str:
    return importlib.metadata.version("aws-cdk-lib")
