"""Where a shift or a rollback happens, in a module both shift_plan and rollback_capacity import."""

from __future__ import annotations

from dataclasses import dataclass

from ops.operations.busy_endpoint import Patience


@dataclass(frozen=True)
class Target:
    env_name: str
    endpoint: str
    canary: str
    primary: str
    region: str | None = None  # --region as given (environments whose config names none)
    patience: Patience = Patience()  # how long writes wait out a busy endpoint (config `operations`)
