"""`bin/ops traffic`: options and output (reading and writing: ops/operations/traffic_export.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from botocore.exceptions import ReadTimeoutError

from ops.commands.common import EnvArg, RegionOpt, runtime
from ops.operations.errors import ExitCode, OpsError
from ops.operations.output import Console
from ops.operations.runtime_hook import runtime_hook
from ops.operations.traffic_export import MAX_DAYS, check_days, read_traffic, write_traffic


def traffic_command(
    ctx: typer.Context,
    env: EnvArg,
    out: Annotated[
        Path, typer.Option(help="CSV to write (timestamp,requests; one row a minute, UTC).", dir_okay=False)
    ],
    days: Annotated[int, typer.Option(help=f"Whole days back from the last complete minute, 1 to {MAX_DAYS}.")] = 7,
    region: RegionOpt = None,
) -> None:
    """Write the endpoint's requests per minute over the last --days as the traffic CSV the planner replays.

    Sums CloudWatch's AWS/SageMaker Invocations (Sum, one-minute period) over every variant of ENV's
    config, minute by minute, and writes what `make plan ENV=… TRAFFIC=FILE.csv` replays; the plan then
    judges shortfall in ENV's release_calendar windows. CloudWatch keeps one-minute datapoints for 15
    days, so at most 14 whole days. Minutes before the first and after the last datapoint are left
    out; a minute without one in between is written as 0 and counted. Read-only.
    Exit codes: 0 written; 1 CloudWatch too slow to answer (the line says what to do); 2 usage (--days outside
    1..14, --out not writable); 5 credentials or access denied; 6 fewer than 60 minutes of Invocations in the span.
    """
    check_days(days)  # before the config or AWS
    rt = runtime(ctx)
    environment = rt.open(env, region)
    try:
        recorded = read_traffic(environment.clients.cloudwatch, environment.cfg, days, rt.now())
    except ReadTimeoutError as error:
        raise OpsError(slow_answer(error, days), ExitCode.AWS_ERROR) from None
    write_traffic(recorded, out)
    console = Console(rt.zone)
    when, busiest = recorded.busiest
    console.ok(
        f"wrote {out}: {len(recorded.requests):,} minutes of {recorded.endpoint} "
        f"({' + '.join(recorded.variants)}), Invocations summed per minute"
    )
    console.line(f"  asked: {console.time(recorded.asked_from)} to {console.time(recorded.asked_to)}")
    console.line(f"  written: {console.time(recorded.start)} to {console.time(recorded.end)}")
    console.line(f"  busiest minute: {busiest:,.0f} requests at {console.time(when)}")
    if recorded.empty_minutes:
        console.warn(f"{recorded.empty_minutes:,} minutes inside the span had no datapoint: written as 0")
    console.line(f"next: make plan ENV={env} TRAFFIC={out}")


def slow_answer(error: ReadTimeoutError, days: int) -> str:
    """What to do when CloudWatch did not answer a GetMetricData call within the client's read timeout, every try."""
    fewer = f"ask for fewer days (--days {max(1, days // 2)})" if days > 1 else "try again later"
    return (
        f"CloudWatch did not answer GetMetricData in time ({error}): it reads every minute of --days {days}; "
        f"{fewer}.{runtime_hook().slow_metrics_hint()}"
    )
