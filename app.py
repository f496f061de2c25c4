#!/usr/bin/env python3
"""CDK entry point: picks the environment from context (`-c env=prod`, default dev) and builds it.

A bad config stops here with every problem listed, before any template is written.
"""

from __future__ import annotations

import sys

import aws_cdk as cdk

from config import ConfigError, load_config
from stacks.environment import add_compliance_checks, build_environment


def main() -> None:
    app = cdk.App()
    env_name = app.node.try_get_context("env") or "dev"
    # Set by `python -m ops deploy` (via `make deploy SCALING_RELEASED=…`) after it deregistered scaling.
    released = [name for name in str(app.node.try_get_context("scaling_released") or "").split(",") if name]
    try:
        cfg = load_config(env_name, scaling_released=released)
    except ConfigError as error:
        print(f"Refusing to synthesise: {error}", file=sys.stderr)
        sys.exit(1)
    build_environment(app, cfg)
    add_compliance_checks(app)
    try:
        app.synth()
    except RuntimeError as error:  # cdk-nag findings: the report above says which and where
        if "ValidationFailed" not in str(error):
            raise
        print(f"Refusing to synthesise {env_name}: unacknowledged cdk-nag findings (listed above)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
