"""`bin/ops traffic`: the endpoint's requests per minute from CloudWatch, as the planner's traffic CSV.

AWS/SageMaker Invocations (Sum, Period 60) of every variant the config names, added up minute by minute.
"Data points with a period of 60 seconds (1-minute) are available for 15 days" and a StartTime at that edge is
rounded to 5 minutes (GetMetricData, botocore's cloudwatch model): at most MAX_DAYS whole days, ending at the
last complete minute. One call returns at most 100,800 datapoints, so the span is read in pieces. A minute
without a datapoint inside the span is written as 0 and counted; minutes before the first and after the last
datapoint are left out (an endpoint created in the span, metrics not yet published).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from config import EnvironmentConfig
from ops.operations.errors import ExitCode, OpsError
from ops.operations.metric_window import invocations_per_minute
from ops.operations.traffic_csv import MIN_MINUTES, TrafficCsvError, read_series, write_series

RETENTION_DAYS = 15  # one-minute datapoints (GetMetricData documentation)
MAX_DAYS = RETENTION_DAYS - 1  # whole days that stay clear of the retention edge
MAX_DATAPOINTS = 100_800  # per GetMetricData call
ONE_MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class RecordedTraffic:
    endpoint: str
    variants: tuple[str, ...]
    asked_from: datetime  # the span asked for, UTC: [asked_from, asked_to)
    asked_to: datetime
    start: datetime  # first written minute (the first with a datapoint)
    requests: tuple[float, ...]  # per minute, all variants
    empty_minutes: int  # inside the written span, minutes without any datapoint (written as 0)

    @property
    def end(self) -> datetime:
        """The end of the last written minute (exclusive)."""
        return self.start + len(self.requests) * ONE_MINUTE

    @property
    def busiest(self) -> tuple[datetime, float]:
        minute = max(range(len(self.requests)), key=lambda m: self.requests[m])
        return self.start + minute * ONE_MINUTE, self.requests[minute]


def check_days(days: int) -> None:
    if not 1 <= days <= MAX_DAYS:
        raise OpsError(
            f"--days {days}: CloudWatch keeps one-minute datapoints for {RETENTION_DAYS} days (GetMetricData "
            f"documentation) and rounds a start at that edge to 5 minutes, so 1 to {MAX_DAYS} days",
            ExitCode.USAGE,
        )


def read_traffic(cloudwatch: Any, cfg: EnvironmentConfig, days: int, now: datetime) -> RecordedTraffic:
    """Every variant's Invocations per minute over the last `days` whole days to the last complete minute."""
    check_days(days)
    variants = tuple(v.name for v in cfg.variants)
    asked_to = now.astimezone(UTC).replace(second=0, microsecond=0)
    asked_from = asked_to - timedelta(days=days)
    totals: dict[datetime, float] = {}
    for start, end in spans(asked_from, asked_to, len(variants)):
        ascending = {"ScanBy": "TimestampAscending"}
        for when, value in invocations_per_minute(cloudwatch, cfg.endpoint_name, variants, start, end, **ascending):
            minute = when.astimezone(UTC).replace(second=0, microsecond=0)
            totals[minute] = totals.get(minute, 0.0) + float(value)
    if not totals:
        raise _too_little(cfg, variants, asked_from, asked_to, 0)
    first, last = min(totals), max(totals)
    minutes = round((last - first) / ONE_MINUTE) + 1
    requests = tuple(totals.get(first + m * ONE_MINUTE, 0.0) for m in range(minutes))
    if minutes < MIN_MINUTES:
        raise _too_little(cfg, variants, asked_from, asked_to, minutes)
    empty = minutes - len(totals)
    return RecordedTraffic(cfg.endpoint_name, variants, asked_from, asked_to, first, requests, empty)


def spans(start: datetime, end: datetime, variants: int) -> Iterator[tuple[datetime, datetime]]:
    """[start, end) cut into pieces of whole minutes whose datapoints (minutes x variants) fit one call."""
    step = ONE_MINUTE * (MAX_DATAPOINTS // max(1, variants))
    while start < end:
        yield start, min(end, start + step)
        start += step


def _too_little(
    cfg: EnvironmentConfig, variants: tuple[str, ...], start: datetime, end: datetime, minutes: int
) -> OpsError:
    found = "no Invocations datapoint" if minutes == 0 else f"Invocations for only {minutes} minutes"
    return OpsError(
        f"CloudWatch has {found} of endpoint {cfg.endpoint_name} (variants {', '.join(variants)}) from "
        f"{start:%Y-%m-%dT%H:%MZ} to {end:%Y-%m-%dT%H:%MZ}; the planner needs at least {MIN_MINUTES} minutes "
        "(wrong region or account, or no traffic yet?)",
        ExitCode.NOT_FOUND,
    )


def write_traffic(recorded: RecordedTraffic, path: Path) -> None:
    """The traffic CSV, read back through the reader the planner uses before this returns."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_series(path, recorded.start, recorded.requests)
        read_series(path)
    except OSError as error:
        raise OpsError(f"--out {path}: cannot write: {error.strerror}", ExitCode.USAGE) from None
    except TrafficCsvError as error:  # a bug here, not the operator's: say so plainly
        raise OpsError(f"--out {path}: written, but the planner cannot read it: {error}") from None
