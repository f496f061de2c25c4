"""No production deploy on an assumed capacity (`make deploy`: ops/pipeline/assumed_capacity.py; `bin/ops deploy`)
unless `ACCEPT_ASSUMED_CAPACITY="<reason>"`, which `make deploy` records in config/deployed/<env>.json.
"""

from __future__ import annotations

import os

from config import EnvironmentConfig
from config.capacity_evidence import PoolType, assumed_types, how_to_measure
from ops.operations.errors import ExitCode, OpsError
from ops.operations.output import Console
from ops.operations.runtime_hook import runtime_hook

OVERRIDE = "ACCEPT_ASSUMED_CAPACITY"


def accepted_reason() -> str | None:
    """The override's reason; None when unset or blank (an undefined GitHub variable arrives empty)."""
    value = os.environ.get(OVERRIDE, "").strip()
    return value or None


def refusal(cfg: EnvironmentConfig, assumed: list[PoolType], command: str) -> str:
    lines = [
        f"refusing to deploy {cfg.name} (production): the capacity of {len(assumed)} pool type(s) is assumed, "
        "never measured, and every floor, target, quota and rollback raise is sized on it:",
        *(f"  {pool.describe()}" for pool in assumed),
        "measure each pool type on staging with `bin/loadtest` before the first prod deploy "
        '(docs/how-to/first-deploy.md, "Measure capacity before the first prod deploy"):',
        *(f"  {pool.instance_type}: {how_to_measure(cfg, pool.instance_type)}" for pool in assumed),
        f"to deploy on the assumption anyway (recorded in config/deployed/{cfg.name}.json, shown by `bin/ops "
        f'status`): {OVERRIDE}="<why>" {command} (the deploy workflow: the GitHub environment variable {OVERRIDE})',
    ]
    return "\n".join(lines)


def check_before_deploy(cfg: EnvironmentConfig, console: Console) -> None:
    """Refused (exit 4) before anything is touched; a note instead where the runtime hook allows it."""
    assumed = assumed_types(cfg) if cfg.production else []
    if not assumed:
        return
    if (note := runtime_hook().assumed_capacity_allowed(cfg.name)) is not None:
        console.line(note)
        return
    reason = accepted_reason()
    if reason is None:
        raise OpsError(refusal(cfg, assumed, f"bin/ops deploy {cfg.name}"), ExitCode.REFUSED)
    types = ", ".join(p.instance_type for p in assumed)
    console.warn(f"{OVERRIDE}: deploying {cfg.name} on an assumed capacity of {types}: {reason!r}")
