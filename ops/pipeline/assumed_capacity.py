"""`python -m ops.pipeline.assumed_capacity ENV`: `make deploy`'s first step, before any AWS call.

A production environment is refused while any pool type's `planning.capacity` is assumed (config/capacity_evidence.py;
the refusal: ops/operations/capacity_gate.py), unless `ACCEPT_ASSUMED_CAPACITY="<reason>"`; record_deployed.py
writes the reason to config/deployed/<env>.json and `bin/ops status` shows it.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from datetime import UTC, datetime

from config import ConfigError, EnvironmentConfig
from config.capacity_evidence import assumed_types
from config.naming import PARAMETER_ACCEPT_ASSUMED_CAPACITY, serving_stack_name
from ops.operations.capacity_gate import OVERRIDE, accepted_reason, refusal
from ops.pipeline.environment_arg import REFUSED, USAGE, environment_or_say_why


def acceptance(cfg: EnvironmentConfig) -> dict[str, object] | None:
    """config/deployed/<env>.json's record of the override (reason, types, who, when), or None without one."""
    assumed = assumed_types(cfg) if cfg.production else []
    reason = accepted_reason() if assumed else None
    if reason is None:
        return None
    who = os.environ.get("GITHUB_ACTOR") or getpass.getuser()
    return {"reason": reason, "types": [p.instance_type for p in assumed], "by": who,
            "at": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.pipeline.assumed_capacity",
        description=f"Refuse a production deploy on an assumed capacity unless {OVERRIDE} gives a reason.",
    )
    parser.add_argument("env")
    parser.add_argument(
        "--cdk-parameter",
        action="store_true",
        help="print the serving stack's AcceptAssumedCapacity parameter for `cdk deploy --parameters`, if its "
        "template has one (constructs/deploy_guards.py) and the override gives a reason; else nothing",
    )
    args = parser.parse_args(argv)
    cfg = environment_or_say_why(args.env)
    if cfg is None:
        return USAGE
    try:
        assumed = assumed_types(cfg)
        reason = accepted_reason() if cfg.production and assumed else None
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE
    if args.cdk_parameter:
        if reason is not None:
            print(f"{serving_stack_name(cfg.name)}:{PARAMETER_ACCEPT_ASSUMED_CAPACITY}={reason}")
        return 0
    if not cfg.production:
        print(f"capacity: {cfg.name} is not production: deploys on assumed capacity are allowed")
        return 0
    if not assumed:
        print(f"capacity: every pool type of {cfg.name} is measured (planning.capacity)")
        return 0
    if reason is None:
        print(f"error: {refusal(cfg, assumed, f'make deploy ENV={cfg.name}')}", file=sys.stderr)
        return REFUSED
    types = ", ".join(p.instance_type for p in assumed)
    print(f"warning ({OVERRIDE}): deploying {cfg.name} on an assumed capacity of {types}: {reason!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
