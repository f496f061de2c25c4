"""Synthesise each environment once per test run, with the same context the CDK CLI uses."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from ruamel.yaml import YAML

from config import ConfigError, load_config_file, load_environment
from config.loader import ENVIRONMENTS_DIR
from stacks.environment import build_environment

ROOT = Path(__file__).resolve().parents[2]
CDK_CONTEXT = json.loads((ROOT / "cdk.json").read_text())["context"]


class Synthesised:
    def __init__(self, env_name: str) -> None:
        self.cfg = load_environment(env_name)
        self.app = cdk.App(context={**CDK_CONTEXT, "env": env_name})
        self.image_stack, self.serving_stack = build_environment(self.app, self.cfg)
        self.image = Template.from_stack(self.image_stack)
        self.serving = Template.from_stack(self.serving_stack)


@pytest.fixture(scope="session")
def cdk_context() -> dict:
    return dict(CDK_CONTEXT)


@pytest.fixture(scope="session")
def prod() -> Synthesised:
    return Synthesised("prod")


@pytest.fixture(scope="session")
def dev() -> Synthesised:
    return Synthesised("dev")


PROD_YAML = YAML(typ="safe", pure=True).load((ENVIRONMENTS_DIR / "prod.yaml").read_text())


@pytest.fixture
def problems(tmp_path: Path) -> Callable[..., list[str]]:
    """Load prod.yaml changed by `mutate` (no deployed state); return the problems as 'field: message'."""

    def load(mutate: Callable[[dict], None], env_name: str = "prod") -> list[str]:
        raw = copy.deepcopy(PROD_YAML)
        raw["name"] = raw["tags"]["Environment"] = env_name
        mutate(raw)
        path = tmp_path / f"{env_name}.yaml"
        with path.open("w") as handle:
            YAML().dump(raw, handle)
        try:
            load_config_file(path, env_name)
        except ConfigError as error:
            return [f"{field}: {message}" for field, message in error.problems]
        return []

    return load
