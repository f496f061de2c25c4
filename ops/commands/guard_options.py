"""The canary guard's options, shared by `ops shift` and `ops promote`."""

from __future__ import annotations

from typing import Annotated

import typer

from ops.operations.guard import GuardPolicy
from ops.operations.output import parse_duration, seconds

MarginOpt = Annotated[
    float,
    typer.Option(
        "--max-5xx-margin",
        min=0,
        help="Refuse when the canary's 5XX rate exceeds the primary's by more than this many percentage points.",
    ),
]
WindowOpt = Annotated[
    float,
    typer.Option(
        parser=parse_duration,
        metavar="DURATION",
        help="How far back the 5XX rates and first-token times look (whole minutes).",
    ),
]
TtftPercentOpt = Annotated[
    float,
    typer.Option(
        "--max-ttft-increase",
        min=0,
        metavar="PERCENT",
        help="Refuse when the canary's time to first token p95 exceeds the primary's by more than this share "
        "and by more than --min-ttft-increase-ms (both variants need --min-canary-invocations streamed requests).",
    ),
]
TtftMsOpt = Annotated[
    float,
    typer.Option(
        "--min-ttft-increase-ms",
        min=0,
        metavar="MS",
        help="A TTFT p95 increase up to this many milliseconds is always allowed (noise on a fast p95).",
    ),
]


def guard_policy(
    margin: float,
    window: float,
    max_ttft_increase_percent: float = GuardPolicy.max_ttft_increase_percent,
    min_ttft_increase_ms: float = GuardPolicy.min_ttft_increase_ms,
    min_invocations: int = GuardPolicy.min_invocations,
) -> GuardPolicy:
    if window < 60 or window % 60:
        raise typer.BadParameter(f"the error window must be whole minutes, got {seconds(window)}")
    return GuardPolicy(
        max_5xx_margin=margin,
        window_seconds=int(window),
        min_invocations=min_invocations,
        max_ttft_increase_percent=max_ttft_increase_percent,
        min_ttft_increase_ms=min_ttft_increase_ms,
    )
