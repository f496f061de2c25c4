"""Markdown comparison of two Plans over the same traffic: what the head config changes in cost and shortfall."""

from __future__ import annotations

from collections.abc import Callable

from workbench.planner.formatting import cell, format_count, format_decimal, format_requests, format_usd
from workbench.planner.results import Plan, Totals
from workbench.planner.summary import configured_of, totals_of
from workbench.planner.verdict import CHECK_NAMES, Verdict, judge

# (row label, the figure, how to print it); the change is printed with the same formatter.
METRICS: list[tuple[str, Callable[[Totals], float], Callable]] = [
    ("Monthly cost (USD)", lambda t: t.monthly_cost_usd, format_usd),
    ("Instance-hours", lambda t: t.instance_hours, format_decimal),
    ("Shortfall minutes", lambda t: t.shortfall_minutes, format_count),
    ("of which in peak windows", lambda t: t.shortfall_minutes_in_peaks, format_count),
    ("Delayed requests", lambda t: t.delayed_requests, format_requests),
    ("Shed requests", lambda t: t.shed_requests, format_requests),
    ("Rejected requests", lambda t: t.rejected_requests, format_requests),
    ("p95 queue wait (s)", lambda t: t.wait_p95_seconds, format_decimal),
    ("p95 wait of delayed (s)", lambda t: t.delayed_wait_p95_seconds, format_decimal),
    ("Scaling activities", lambda t: t.scaling_activities, format_count),
]


def format_change(base: float, head: float, formatter: Callable) -> str:
    """'+$100 (+10.0 %)': signed absolute change, then relative to base (none when base is 0)."""
    delta = head - base
    if delta == 0:
        return "no change"
    absolute = ("+" if delta > 0 else "-") + formatter(abs(delta))
    if base == 0:
        return f"{absolute} (from 0)"
    return f"{absolute} ({delta / base * 100:+.1f} %)"


def _table(base: Totals, head: Totals) -> list[str]:
    lines = ["| Metric | Base | Head | Change |", "|---|---:|---:|---:|"]
    for label, value, formatter in METRICS:
        b, h = value(base), value(head)
        lines.append(f"| {label} | {formatter(b)} | {formatter(h)} | {format_change(b, h, formatter)} |")
    return lines


def _verdict(base_total: Totals, head_total: Totals, base: Verdict, head: Verdict) -> str:
    """Cost and shortfall change, then what is true of the two budgets: both meet theirs, head breaks what
    base met, head meets what base broke, or both break theirs (each failed figure base → head against the
    limit); "nothing changed" when head's figures are base's."""
    base_checks = {check.name: check for check in base.checks}
    failed = "; ".join(check.against_limit(base_checks.get(check.name)) for check in head.checks if not check.passed)
    if head.met:
        budget = "both meet their budget" if base.met else "head meets its budget, which base breaks"
    else:
        budget = f"{'head breaks its budget' if base.met else 'base and head both break their budget'}: {failed}"
    changes = _cost_and_shortfall(base_total, head_total)
    if base_total == head_total:
        changes = f"nothing changed ({changes})"
    return f"**Verdict:** {changes}; {budget}."


def _cost_and_shortfall(base: Totals, head: Totals) -> str:
    cost_delta = head.monthly_cost_usd - base.monthly_cost_usd
    if cost_delta > 0:
        cost = f"head costs {format_usd(cost_delta)}/month more"
    elif cost_delta < 0:
        cost = f"head costs {format_usd(-cost_delta)}/month less"
    else:
        cost = "head costs the same"

    shortfall_delta = head.shortfall_minutes - base.shortfall_minutes
    if shortfall_delta < 0:
        shortfall = f"removes {format_count(-shortfall_delta)} shortfall minutes"
    elif shortfall_delta > 0:
        shortfall = f"adds {format_count(shortfall_delta)} shortfall minutes"
    else:
        shortfall = f"leaves shortfall unchanged at {format_count(head.shortfall_minutes)} minutes"
    return f"{cost} and {shortfall}"


def _budget(base: Verdict, head: Verdict) -> str:
    """Whether each config meets its own planning.budget (the summary's verdict), and what fails."""

    def outcome(verdict: Verdict) -> str:
        failed = [CHECK_NAMES[check.name] for check in verdict.checks if not check.passed]
        return verdict.headline if verdict.met else f"not met ({', '.join(failed)})"

    return f"**Budget:** base {outcome(base)}; head {outcome(head)}."


def render_comparison(base: Plan, head: Plan) -> str:
    base_configured, head_configured = configured_of(base), configured_of(head)
    if base_configured.minutes != head_configured.minutes:
        raise ValueError(
            f"cannot compare plans over different traffic lengths: base has {base_configured.minutes} minutes"
            f" ({base.traffic_name}), head has {head_configured.minutes} minutes ({head.traffic_name})"
        )
    base_total, head_total = totals_of(base_configured), totals_of(head_configured)

    env = base.env if base.env == head.env else f"{base.env} -> {head.env}"
    traffic = (
        base.traffic_name if base.traffic_name == head.traffic_name else f"{base.traffic_name} -> {head.traffic_name}"
    )
    lines = [f"## Capacity plan change: {env} ({traffic})", ""]
    lines += [f"### Total: {cell(head_configured.title)}", ""]
    lines += _table(base_total, head_total)

    base_variants, head_variants = base_configured.per_variant, head_configured.per_variant
    for name in base_variants:
        if name in head_variants:
            lines += ["", f"### Variant {name}", ""]
            lines += _table(base_variants[name], head_variants[name])

    added = [name for name in head_variants if name not in base_variants]
    removed = [name for name in base_variants if name not in head_variants]
    if added or removed:
        lines += ["", "### Variants added or removed", ""]
        lines += [f"- Added in head: {n} ({format_usd(head_variants[n].monthly_cost_usd)}/month)" for n in added]
        lines += [
            f"- Removed in head: {n} (was {format_usd(base_variants[n].monthly_cost_usd)}/month)" for n in removed
        ]
    base_verdict, head_verdict = judge(base), judge(head)
    lines += ["", _budget(base_verdict, head_verdict), "", _verdict(base_total, head_total, base_verdict, head_verdict)]
    return "\n".join(lines) + "\n"
