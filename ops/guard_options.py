"""The canary guard's command-line options, shared by `ops shift` and `ops promote`, and the duration
syntax every ops option that takes a time accepts."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from ops.guard import GuardPolicy
from ops.output import seconds

DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|min|m|s)")
UNIT_SECONDS = {"h": 3600, "min": 60, "m": 60, "s": 1}


def parse_duration(value: str | float) -> float:
    """`90`, `90s`, `10m`, `30min`, `2.5min`, `1h30m` → seconds; everything `seconds()` prints parses."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = DURATION_PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        raise typer.BadParameter(f"'{value}' is not a duration like 90s, 10m, 30min or 1h30m")
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)


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
