"""`bin/ops restore-scaling ENV [FILE]`: the floors in SSM (ops/operations/floor_store.py), or a file.

A floor record acted on (put back, or overtaken) is removed from SSM, so the next restore finds nothing stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from config import naming
from ops.commands.common import EnvArg, RegionOpt, runtime
from ops.operations import floor_store
from ops.operations.busy_endpoint import Patience, wait_in_service
from ops.operations.environment import EmergencyAccess
from ops.operations.errors import ExitCode, OpsError
from ops.operations.output import Console
from ops.operations.rollback_capacity import FloorRecord, restore_floor
from ops.operations.scaling import ScalingSnapshot, restore_scaling

SnapshotArg = Annotated[
    Path | None,
    typer.Argument(
        help="Snapshot written by `deploy`, or a floor record's local copy; none: the floor records in SSM.",
        show_default=False,
    ),
]


def restore_scaling_command(
    ctx: typer.Context, env: EnvArg, snapshot: SnapshotArg = None, region: RegionOpt = None
) -> None:
    """Put back the minimum a rollback (or a shift) raised, from its record in SSM, only while it is still
    the one set; or, from a snapshot file, register scaling targets, policies and scheduled actions again,
    e.g. after a deploy was killed before it could restore them."""
    rt = runtime(ctx)
    access = rt.open_for_emergency(env, region)  # an invalid config does not stop it
    console = Console(rt.zone)
    patience = Patience.of(access.cfg and access.cfg.operations)
    wait_in_service(
        access.clients.sagemaker, access.identity.endpoint_name, "change its scaling", console, rt.timing, patience
    )
    if snapshot is None:
        _restore_published(access, console)
        return
    saved = FloorRecord.load(snapshot) if FloorRecord.is_one(snapshot) else ScalingSnapshot.load(snapshot)
    if saved.endpoint != access.identity.endpoint_name:
        raise OpsError(
            f"{snapshot} is for endpoint {saved.endpoint}, not {access.identity.endpoint_name}", ExitCode.USAGE
        )
    if isinstance(saved, ScalingSnapshot):
        restore_scaling(access.clients.autoscaling, saved, console, snapshot)
        return
    restore_floor(access.clients.autoscaling, saved, console)
    _forget_if_same(access, saved)


def _restore_published(access: EmergencyAccess, console: Console) -> None:
    env = access.identity.name
    records = floor_store.published(access.clients.ssm, env)
    if not records:
        console.line(f"no floor record in SSM under {naming.floor_record_path(env)}: no raised minimum to put back")
        return
    for name, document in sorted(records.items()):
        record = FloorRecord.parse(document, f"SSM parameter {name}")
        if record.endpoint != access.identity.endpoint_name:
            console.warn(f"{name} is for endpoint {record.endpoint}, not {access.identity.endpoint_name}: left alone")
            continue
        console.line(
            f"floor record {name}: {record.variant} minimum {record.min_before} → {record.raised_to} at {record.raised_at}"
        )
        restore_floor(access.clients.autoscaling, record, console)
        floor_store.forget(access.clients.ssm, name)


def _forget_if_same(access: EmergencyAccess, record: FloorRecord) -> None:
    """A local copy restored: SSM's record goes too if it is the same one (not a newer rollback's)."""
    name = floor_store.parameter_name(access.identity.name, record.variant)
    document = floor_store.published(access.clients.ssm, access.identity.name).get(name)
    if document is not None and FloorRecord.parse(document, f"SSM parameter {name}") == record:
        floor_store.forget(access.clients.ssm, name)
