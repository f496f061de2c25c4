"""`bin/ops scaling-history`: options and output (reading: ops/operations/scaling_history.py)."""

from __future__ import annotations

import math
import re
from typing import Annotated

import typer

from ops.commands.common import EnvArg, RegionOpt, runtime
from ops.operations.output import Console, one_line
from ops.operations.scaling_history import (
    MAX_DAYS,
    MIN_SAMPLES,
    Activity,
    History,
    check_days,
    read_history,
    record_provisioning,
)

# Application Auto Scaling's Cause texts (user guide, "Scaling activities for Application Auto Scaling").
ALARM_CAUSE = re.compile(r"monitor alarm (\S+) in state ALARM triggered policy (\S+)")
SCHEDULE_CAUSE = re.compile(r"scheduled action name (\S+) was triggered")


def scaling_history_command(
    ctx: typer.Context,
    env: EnvArg,
    days: Annotated[
        int, typer.Option(min=1, help=f"Look back this many days (Application Auto Scaling keeps {MAX_DAYS}).")
    ] = MAX_DAYS,
    write_config: Annotated[
        bool,
        typer.Option(
            "--write-config",
            help="Record the p95 (rounded up) as planning.provisioning_minutes in config/environments/ENV.yaml, "
            f"with where and when it was measured; refused below {MIN_SAMPLES} scale-outs.",
        ),
    ] = False,
    region: RegionOpt = None,
) -> None:
    """How long the endpoint's scale-outs took, from the account's record.

    Reads Application Auto Scaling's scaling activities of each variant (six weeks at most) and prints
    each successful scale-out's duration, from StartTime (the new desired count asked of SageMaker) to
    EndTime (SageMaker reported the change fulfilled: the new instances in service), with p50 and p95
    per instance type where the type is known; failed and unfulfilled activities with their status
    message (ResourceLimitExceeded, insufficient capacity); scale-ins counted apart. Read-only unless
    --write-config. Exit codes: 0 read (and written); 2 usage (--days over 42); 3 --write-config with fewer
    than 5 scale-outs (nothing written); 5 credentials or access denied; 6 no such endpoint.
    """
    check_days(days)  # before the config or AWS: the API keeps six weeks
    rt = runtime(ctx)
    environment = rt.open(env, region)
    history = read_history(environment.clients, environment.cfg, days, rt.now())
    show_history(history, environment.cfg.planning.provisioning_provenance(), Console(rt.zone))
    if write_config:
        typer.echo(record_provisioning(environment.cfg, history))


def show_history(history: History, provenance: str, console: Console) -> None:
    _header(history, console)
    console.heading("Successful scale-outs")
    _scale_outs(history, console)
    console.heading("Provisioning time by instance type (nearest-rank percentiles)")
    every, overall = history.stats_by_type(), history.overall()
    if overall is not None and len(every) > 1:
        every.append(overall)
    console.table(
        ["INSTANCE TYPE", "SCALE-OUTS", "P50 MIN", "P95 MIN", "LONGEST MIN"],
        [[s.label, s.samples, f"{s.p50:.1f}", f"{s.p95:.1f}", f"{s.longest:.1f}"] for s in every],
    )
    console.heading("Failed or unfulfilled (capacity that did not arrive)")
    _failures(history, console)
    console.heading("Not provisioning time (counted apart)")
    console.line("  " + ", ".join(f"{kind} {count}" for kind, count in history.counted_apart().items()))
    console.heading("planning.provisioning_minutes")
    console.line(f"  now: {provenance}")
    samples = overall.samples if overall else 0
    if overall is not None and samples >= MIN_SAMPLES:
        console.line(
            f"  --write-config would record {math.ceil(overall.p95)} (p95 {overall.p95:.1f} min, {samples} scale-outs)"
        )
    else:
        console.line(f"  too few scale-outs for --write-config ({samples} < {MIN_SAMPLES})")


def _header(history: History, console: Console) -> None:
    console.line(
        f"Scaling activities of {history.endpoint} ({history.env}), last {history.days} days "
        f"(to {console.time(history.read_at)})"
    )
    console.line(
        "  duration: StartTime (desired count asked of SageMaker) to EndTime (SageMaker reported it fulfilled); "
        "alarm detection before it is not included"
    )
    created = console.time(history.config_created)
    console.line(f"  instance types: endpoint config in service {history.config_name} (created {created})")
    for variant in history.variants:
        now = ", ".join(f"{t} {variant.in_service.get(t, 0)}" for t in variant.types)
        console.line(f"    {variant.variant}: {' > '.join(variant.types)}; in service now: {now}")


def _scale_outs(history: History, console: Console) -> None:
    if not history.scale_outs:
        console.line("  none")
        return
    rows = [
        [a.variant, history.label(a.variant), console.time(a.started), _change(a), f"{a.minutes:.1f}", cause(a.cause)]
        for a in history.scale_outs
    ]
    console.table(["VARIANT", "TYPE", "STARTED", "COUNT", "MINUTES", "CAUSE"], rows)


def _failures(history: History, console: Console) -> None:
    """Each with its whole StatusMessage: the error code (ResourceLimitExceeded) is at its end."""
    if not history.failures:
        console.line("  none")
    for a in history.failures:
        console.fail(f"{a.variant} ({history.label(a.variant)}) {console.time(a.started)}: {a.status}, {_change(a)}")
        console.line(f"      {one_line(a.message or 'no status message', 2000)}")
        console.line(f"      cause: {cause(a.cause)}")


def _change(activity: Activity) -> str:
    return f"{_count(activity.before)}->{_count(activity.target)}"


def cause(text: str) -> str:
    """`monitor alarm …-AlarmHigh-… in state ALARM triggered policy P` → `policy P (AlarmHigh)`;
    `scheduled action name S was triggered` → `schedule S`; anything else as written."""
    alarm = ALARM_CAUSE.search(text)
    if alarm:
        kind = next((k for k in ("AlarmHigh", "AlarmLow") if f"-{k}-" in alarm.group(1)), f"alarm {alarm.group(1)}")
        return f"policy {alarm.group(2)} ({kind})"
    scheduled = SCHEDULE_CAUSE.search(text)
    return f"schedule {scheduled.group(1)}" if scheduled else one_line(text, 120)


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)
