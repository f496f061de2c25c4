#!/usr/bin/env python3
"""CDK entry point: picks the environment from context (`-c env=prod`, default dev) and builds it;
`-c env=all` builds every environment in one app (what `make synth` does: one jsii start, not three).

A bad config stops here with every problem listed, before any template is written. Whatever stops
the synth (a refused config, a cdk-nag finding, an error inside the CDK) ends with a message, exit
status 1 and no template in the output directory, never a traceback (`-c debug=true` re-raises).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ops.pipeline.toolchain import use_pinned_node

use_pinned_node()  # the entry point sets the pinned Node up before `import aws_cdk` starts jsii (config changes no variable)

import aws_cdk as cdk  # noqa: E402

from config import ConfigError, known_environments, load_catalog, load_environment  # noqa: E402
from config.checks.capacity import measured_capacity_warnings  # noqa: E402

# What a synth writes into the cloud assembly directory; removed when the synth is refused.
ASSEMBLY_FILES = ("*.template.json", "*.assets.json", "manifest.json", "tree.json")
MAX_ERROR_CHARS = 500


def main() -> int:
    # aws-cdk-lib's built-in CloudFormation validation (@aws/cloudformation-validate, on by default) checks
    # cfn-lint's rules (its ignore list names cfn-lint's IDs: W3005, E1018, ...) and only warns; `make synth`
    # runs the pinned cfn-lint on every template right after, failing on an error. Its engine's start-up
    # was ~4.5 s of the ~12 s of CPU a warm `make synth` took (issue 36). cdk-nag's packs still run.
    app = cdk.App(builtin_cloud_formation_validation=False)
    env_name = str(app.node.try_get_context("env") or "dev")
    try:
        return synthesise(app, env_name)
    except Exception as error:  # noqa: BLE001 (the one place that turns any failure into a refusal)
        if app.node.try_get_context("debug"):
            raise
        first_line = (str(error).strip().splitlines() or [""])[0][:MAX_ERROR_CHARS]
        return refuse(app, f"Refusing to synthesise {env_name[:60]}: {type(error).__name__}: {first_line}")


def synthesise(app: cdk.App, env_name: str) -> int:
    env_names = known_environments() if env_name == "all" else [env_name]
    # Set by `python -m ops deploy` (via `make deploy SCALING_RELEASED=…`) after it deregistered scaling.
    released = [name for name in str(app.node.try_get_context("scaling_released") or "").split(",") if name]
    # `make deploy VARIANTS_CHANGED=1`: one update without the blue/green guardrails, which need the
    # deployed variant names; the set of variants may then change (docs/deploying.md).
    variants_changed = bool(app.node.try_get_context("variants_changed"))
    configs, errors = [], []
    for name in env_names:
        try:
            configs.append(load_environment(name, scaling_released=released, variants_changed=variants_changed))
        except ConfigError as error:
            errors.append(str(error))
    if errors:
        return refuse(app, "Refusing to synthesise: " + "\n".join(errors))
    for cfg in configs:  # a measured capacity that may no longer fit: said, never refused
        for warning in measured_capacity_warnings(cfg, load_catalog()):
            print(f"warning: {warning}", file=sys.stderr)
    # Imported once the configs are valid: the construct tree's modules take ~1.2 s of CPU to import,
    # which a refused config (the common mistake) need not wait for.
    from stacks.ci_access_stack import build_ci_access, served_resources
    from stacks.environment import add_compliance_checks, build_environment

    for cfg in configs:
        image, serving = build_environment(app, cfg, guarded=not variants_changed)
        # The people's policies and roles, an administrator's to deploy (docs/operations.md "Permissions").
        build_ci_access(app, cfg, served_resources(cfg, image, serving), serving)
    add_compliance_checks(app)
    try:
        app.synth()
    except RuntimeError as error:  # cdk-nag findings: the report above says which and where
        if "ValidationFailed" not in str(error):
            raise
        return refuse(app, f"Refusing to synthesise {env_name}: unacknowledged cdk-nag findings (listed above)")
    return 0


def refuse(app: cdk.App, message: str) -> int:
    """Print why, and leave no template behind for a deploy to pick up."""
    outdir = Path(app.outdir)
    for pattern in ASSEMBLY_FILES:
        for path in outdir.glob(pattern):
            path.unlink(missing_ok=True)
    print(message, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
