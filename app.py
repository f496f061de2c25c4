#!/usr/bin/env python3
"""CDK entry point: picks the environment from context (`-c env=prod`, default dev) and builds it;
`-c env=all` builds every environment in one app (what `make synth` does: one jsii start, not three).

A bad config stops here with every problem listed, before any template is written.
"""

from __future__ import annotations

import sys

import aws_cdk as cdk

from config import ConfigError, known_environments, load_config
from stacks.environment import add_compliance_checks, build_environment


def main() -> None:
    app = cdk.App()
    env_name = app.node.try_get_context("env") or "dev"
    env_names = known_environments() if env_name == "all" else [env_name]
    # Set by `python -m ops deploy` (via `make deploy SCALING_RELEASED=…`) after it deregistered scaling.
    released = [name for name in str(app.node.try_get_context("scaling_released") or "").split(",") if name]
    # `make deploy VARIANTS_CHANGED=1`: one update without the blue/green guardrails, which need the
    # deployed variant names; the set of variants may then change (README).
    variants_changed = bool(app.node.try_get_context("variants_changed"))
    configs, errors = [], []
    for name in env_names:
        try:
            configs.append(load_config(name, scaling_released=released, variants_changed=variants_changed))
        except ConfigError as error:
            errors.append(str(error))
    if errors:
        print("Refusing to synthesise: " + "\n".join(errors), file=sys.stderr)
        sys.exit(1)
    for cfg in configs:
        build_environment(app, cfg, guarded=not variants_changed)
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
