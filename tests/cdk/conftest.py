"""Synthesise each environment once per test module, with the same context the CDK CLI uses."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from config import load_config
from stacks.environment import build_environment

ROOT = Path(__file__).resolve().parents[2]
CDK_CONTEXT = json.loads((ROOT / "cdk.json").read_text())["context"]


class Synthesised:
    def __init__(self, env_name: str) -> None:
        self.cfg = load_config(env_name)
        self.app = cdk.App(context={**CDK_CONTEXT, "env": env_name})
        self.image_stack, self.serving_stack = build_environment(self.app, self.cfg)
        self.image = Template.from_stack(self.image_stack)
        self.serving = Template.from_stack(self.serving_stack)


@pytest.fixture(scope="session")
def cdk_context() -> dict:
    return dict(CDK_CONTEXT)


@pytest.fixture(scope="module")
def prod() -> Synthesised:
    return Synthesised("prod")


@pytest.fixture(scope="module")
def dev() -> Synthesised:
    return Synthesised("dev")
