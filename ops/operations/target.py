"""Where a shift or a rollback happens: one endpoint and the two variants traffic moves between.

A module of its own so the shift's plan (ops/operations/shift_plan.py) and the rollback's sizing of the primary
(ops/operations/rollback_capacity.py) can both name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from ops.operations.busy_endpoint import Patience


@dataclass(frozen=True)
class Target:
    """Where the shift happens: one endpoint and the two variants traffic moves between."""

    env_name: str
    endpoint: str
    canary: str
    primary: str
    region: str | None = None  # --region as given (environments whose config names none)
    patience: Patience = Patience()  # how long writes wait out a busy endpoint (config `operations`)
