"""The canary guard: may more traffic go to the canary right now?

It refuses on an alarm on the canary or the endpoint, a 5XX rate or TTFT p95 above the primary's by more than
a margin, and (when required) too little evidence: a canary at 0 % has no error rate, so "no errors" is no pass.
A check that did not run is named in `Verdict.not_checked`, never in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ops.operations.alarms import firing_alarms
from ops.operations.metric_window import SAGEMAKER, first_token_times, variant_query, window_results


@dataclass(frozen=True)
class GuardPolicy:
    max_5xx_margin: float = 1.0  # percentage points the canary's 5XX rate may exceed the primary's
    window_seconds: int = 300  # how far back the 5XX rates look; a multiple of 60
    # Canary invocations before more traffic may go to it: 100 puts one error at 1 %, the default margin.
    min_invocations: int = 100
    # TTFT p95 above the primary's by this share or these milliseconds, whichever allows more (20 % of 100 ms is noise).
    max_ttft_increase_percent: float = 20.0
    min_ttft_increase_ms: float = 50.0


@dataclass(frozen=True)
class Verdict:
    problems: tuple[str, ...]
    summary: str  # the checks that ran, with their figures; never one that did not run
    canary_invocations: float = 0.0  # in the window
    total_invocations: float = 0.0  # both variants, in the window
    not_checked: tuple[str, ...] = ()  # each check that did not run, and why

    @property
    def healthy(self) -> bool:
        return not self.problems


def check_canary(
    cloudwatch: Any,
    endpoint: str,
    canary: str,
    primary: str,
    policy: GuardPolicy,
    require_evidence: bool = True,
    require_latency: bool = False,
) -> Verdict:
    """Alarms and the margins where there is something to compare; `require_evidence`: enough canary
    invocations; `require_latency`: a TTFT comparison itself (nothing to compare is then a refusal)."""
    problems = [
        f"alarm {alarm.name} is in ALARM ({alarm.reason})"
        for alarm in firing_alarms(cloudwatch, endpoint)
        if alarm.concerns(canary)
    ]
    ran = [] if problems else ["alarms: none firing"]
    not_checked = []
    counts = _counts(cloudwatch, endpoint, [canary, primary], policy.window_seconds)
    canary_invocations = counts[canary][0]
    window = f"{policy.window_seconds // 60}min"
    if require_evidence and canary_invocations < policy.min_invocations:
        problems.append(
            f"not enough evidence: the canary served {canary_invocations:.0f} invocations in the last {window}, "
            f"a step needs {policy.min_invocations} (--min-canary-invocations): let it serve longer at this weight"
        )
    elif require_evidence:
        ran.append(
            f"evidence: {canary_invocations:.0f} canary invocations in {window}, {policy.min_invocations} needed"
        )
    error_rates, error_problem = _compare_errors(counts, canary, primary, policy)
    if error_rates is None:
        not_checked.append(f"5XX margin: no canary invocations in the last {window}")
    else:
        ran.append(error_rates)
    latency, latency_problem = _compare_first_token(cloudwatch, endpoint, canary, primary, policy)
    if latency_problem is None and latency.startswith(NOT_COMPARED):
        if require_latency:
            latency_problem = f"{latency}: {LATENCY_HINT}"
        else:
            not_checked.append(latency)
    elif latency_problem is None:
        ran.append(latency)
    problems += [p for p in (error_problem, latency_problem) if p]
    total = sum(invocations for invocations, _ in counts.values())
    return Verdict(tuple(problems), "; ".join(ran), canary_invocations, total, tuple(not_checked))


NOT_COMPARED = "TTFT not compared"
LATENCY_HINT = (
    "a step needs both variants' TimeToFirstToken p95 (--min-canary-invocations streamed requests each); let "
    "both serve streamed requests longer at this weight, check that the containers' metrics still arrive, or "
    "skip the check with --override REASON (logged)"
)


def _compare_errors(
    counts: dict[str, tuple[float, float]], canary: str, primary: str, policy: GuardPolicy
) -> tuple[str | None, str | None]:
    """(summary or None when the canary served nothing, problem or None): the 5XX margin."""
    rates = {variant: _percent(errors, invocations) for variant, (invocations, errors) in counts.items()}
    canary_rate, primary_rate = rates[canary], rates[primary]
    if canary_rate is None:
        return None, None
    summary = f"5XX over {policy.window_seconds // 60}min: canary {canary_rate:.2f}%, primary {_rate(primary_rate)}"
    margin = canary_rate - (primary_rate or 0.0)
    if margin <= policy.max_5xx_margin:
        return summary, None
    return summary, (
        f"canary 5XX rate {canary_rate:.2f}% exceeds the primary's {_rate(primary_rate)} "
        f"by {margin:.2f} points (allowed {policy.max_5xx_margin:g})"
    )


def _compare_first_token(
    cloudwatch: Any, endpoint: str, canary: str, primary: str, policy: GuardPolicy
) -> tuple[str, str | None]:
    """(summary, problem or None); the summary starts with NOT_COMPARED when there is nothing to compare."""
    times = first_token_times(cloudwatch, endpoint, [canary, primary], policy.window_seconds)
    mine, theirs = times[canary], times[primary]
    needed = policy.min_invocations
    canary_p95, primary_p95 = mine.percentiles["p95"], theirs.percentiles["p95"]
    if min(mine.requests, theirs.requests) < needed or canary_p95 is None or primary_p95 is None:
        missing = [name for name, p95 in ((canary, canary_p95), (primary, primary_p95)) if p95 is None]
        enough = min(mine.requests, theirs.requests) >= needed
        no_p95 = f" (no p95 for {' or '.join(missing)})" if missing and enough else ""
        summary = (
            f"{NOT_COMPARED}: {canary} {mine.requests:.0f} streams, {primary} {theirs.requests:.0f} streams, "
            f"{needed} each needed in the last {policy.window_seconds // 60}min{no_p95}"
        )
        return summary, None
    summary = f"TTFT p95 canary {canary_p95:.0f} ms, primary {primary_p95:.0f} ms"
    allowed = max(primary_p95 * policy.max_ttft_increase_percent / 100, policy.min_ttft_increase_ms)
    if canary_p95 - primary_p95 <= allowed:
        return summary, None
    return summary, (
        f"canary time to first token p95 {canary_p95:.0f} ms is {canary_p95 - primary_p95:.0f} ms above the "
        f"primary's {primary_p95:.0f} ms over the last {policy.window_seconds // 60}min (allowed: "
        f"+{policy.max_ttft_increase_percent:g} % or +{policy.min_ttft_increase_ms:g} ms, whichever is more)"
    )


def _rate(rate: float | None) -> str:
    return "no traffic" if rate is None else f"{rate:.2f}%"


def _percent(errors: float, invocations: float) -> float | None:
    return 100 * errors / invocations if invocations else None


def _counts(cloudwatch: Any, endpoint: str, variants: list[str], window_seconds: int) -> dict[str, tuple[float, float]]:
    """(invocations, 5XX errors) per variant over the window."""
    queries = [
        variant_query(f"{prefix}{index}", SAGEMAKER, metric, endpoint, variant, "Sum", window_seconds)
        for index, variant in enumerate(variants)
        for prefix, metric in (("i", "Invocations"), ("e", "Invocation5XXErrors"))
    ]
    totals: dict[str, float] = {}
    for query_id, values in window_results(cloudwatch, queries, window_seconds):
        totals[query_id] = totals.get(query_id, 0.0) + sum(values)
    return {variant: (totals.get(f"i{i}", 0.0), totals.get(f"e{i}", 0.0)) for i, variant in enumerate(variants)}
