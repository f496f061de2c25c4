"""Synthesise each environment once per test run (shared by the xdist workers), with the same context the
CDK CLI uses."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from ruamel.yaml import YAML

from config import ConfigError, load_config_file, load_environment, naming
from config.loader import ENVIRONMENTS_DIR
from stacks.ci_access_stack import build_ci_access, served_resources
from stacks.environment import build_environment
from tests.shared_synthesis import CDK_CONTEXT, cloud_assembly


class Synthesised:
    """One environment's image, serving and access templates, read from the run's shared cloud assembly
    (tests/shared_synthesis.py). The construct tree (`app`, `image_stack`, `serving_stack`) is built in
    this process only for a test that asks for it; it synthesises to the same templates."""

    def __init__(self, env_name: str) -> None:
        self.cfg = load_environment(env_name)
        self.assembly = cloud_assembly(env_name)
        self.image_stack_name = naming.image_stack_name(env_name)
        self.serving_stack_name = naming.serving_stack_name(env_name)
        self.access_stack_name = naming.ci_access_stack_name(env_name)
        self.image = self._template(self.image_stack_name)
        self.serving = self._template(self.serving_stack_name)
        self.access = self._template(self.access_stack_name)  # the people's policies and roles (issue 51)

    def _template(self, stack_name: str) -> Template:
        return Template.from_json(json.loads((self.assembly / f"{stack_name}.template.json").read_text()))

    @cached_property
    def _built(self) -> tuple[cdk.App, cdk.Stack, cdk.Stack]:
        app = cdk.App(context={**CDK_CONTEXT, "env": self.cfg.name})
        image, serving = build_environment(app, self.cfg)
        build_ci_access(app, self.cfg, served_resources(self.cfg, image, serving), serving)  # its imports: exports
        return app, image, serving

    @property
    def app(self) -> cdk.App:
        return self._built[0]

    @property
    def image_stack(self):  # noqa: ANN201 (stacks.image_stack.ImageStack)
        return self._built[1]

    @property
    def serving_stack(self):  # noqa: ANN201 (stacks.serving_stack.ServingStack)
        return self._built[2]


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
