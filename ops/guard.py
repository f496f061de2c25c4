"""The canary guard: may more traffic go to the canary right now?

It refuses while an alarm that watches the canary (or the whole endpoint) is in ALARM, or while the
canary's 5XX rate exceeds the primary's by more than a margin over a recent window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ops.alarms import ENDPOINT_DIMENSION, VARIANT_DIMENSION, firing_alarms

NAMESPACE = "AWS/SageMaker"


@dataclass(frozen=True)
class GuardPolicy:
    max_5xx_margin: float = 1.0  # percentage points the canary's 5XX rate may exceed the primary's
    window_seconds: int = 300  # how far back the 5XX rates look; a multiple of 60


@dataclass(frozen=True)
class Verdict:
    problems: tuple[str, ...]
    summary: str

    @property
    def healthy(self) -> bool:
        return not self.problems


def check_canary(cloudwatch: Any, endpoint: str, canary: str, primary: str, policy: GuardPolicy) -> Verdict:
    problems = [
        f"alarm {alarm.name} is in ALARM ({alarm.reason})"
        for alarm in firing_alarms(cloudwatch, endpoint)
        if alarm.concerns(canary)
    ]
    rates = _error_rates(cloudwatch, endpoint, [canary, primary], policy.window_seconds)
    canary_rate, primary_rate = rates[canary], rates[primary]
    window = f"{policy.window_seconds // 60}min"
    if canary_rate is None:
        summary = f"no canary invocations in the last {window}"
    else:
        summary = f"5XX over {window}: canary {canary_rate:.2f}%, primary {_rate(primary_rate)}"
        margin = canary_rate - (primary_rate or 0.0)
        if margin > policy.max_5xx_margin:
            problems.append(
                f"canary 5XX rate {canary_rate:.2f}% exceeds the primary's {_rate(primary_rate)} "
                f"by {margin:.2f} points (allowed {policy.max_5xx_margin:g})"
            )
    return Verdict(tuple(problems), summary)


def _rate(rate: float | None) -> str:
    return "no traffic" if rate is None else f"{rate:.2f}%"


def _error_rates(cloudwatch: Any, endpoint: str, variants: list[str], window_seconds: int) -> dict[str, float | None]:
    """5XX errors as a percentage of invocations per variant; None where there were no invocations."""
    # End on the next whole minute so the current, still-filling minute counts.
    end = (datetime.now(UTC) + timedelta(minutes=1)).replace(second=0, microsecond=0)
    queries = []
    for index, variant in enumerate(variants):
        for metric in ("Invocations", "Invocation5XXErrors"):
            queries.append(
                {
                    "Id": f"{'i' if metric == 'Invocations' else 'e'}{index}",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": NAMESPACE,
                            "MetricName": metric,
                            "Dimensions": [
                                {"Name": ENDPOINT_DIMENSION, "Value": endpoint},
                                {"Name": VARIANT_DIMENSION, "Value": variant},
                            ],
                        },
                        "Period": window_seconds,
                        "Stat": "Sum",
                    },
                    "ReturnData": True,
                }
            )
    totals: dict[str, float] = {}
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=end - timedelta(seconds=window_seconds), EndTime=end
    )
    for page in pages:
        for result in page["MetricDataResults"]:
            totals[result["Id"]] = totals.get(result["Id"], 0.0) + sum(result["Values"])
    rates: dict[str, float | None] = {}
    for index, variant in enumerate(variants):
        invocations = totals.get(f"i{index}", 0.0)
        rates[variant] = 100 * totals.get(f"e{index}", 0.0) / invocations if invocations else None
    return rates
