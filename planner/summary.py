"""Markdown summary of a Plan, short enough for a pull-request comment.

Also holds the number formatting shared with compare.py, so both reports print figures alike.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from planner.results import Plan, Scenario, Totals

COST_GOAL_VS_ORACLE = 1.25  # the configured fleet may cost at most this multiple of the oracle's
LOCAL_TZ = ZoneInfo("Asia/Tokyo")  # where MangaAssist's readers are


def format_usd(value: float) -> str:
    return f"${value:,.0f}"


def format_count(value: int) -> str:
    return f"{value:,}"


def format_requests(value: float) -> str:
    # The simulator works in fractional requests; "0" next to a verdict saying "rejected" would read as a bug.
    if 0 < value < 1:
        return "<1"
    return f"{value:,.0f}"


def format_decimal(value: float) -> str:
    return f"{value:,.1f}"


def format_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def format_time(moment: datetime) -> str:
    """UTC first (what logs and CloudWatch show), then the readers' local time."""
    utc = moment.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%d %H:%M UTC")
    local = moment.astimezone(LOCAL_TZ).strftime("%a %Y-%m-%d %H:%M")
    return f"{utc} ({local} Asia/Tokyo)"


def format_run_length(minutes: int) -> str:
    """'week' for the intended 7-day replay, else the actual span, so a column never claims a week it isn't."""
    if minutes == 7 * 24 * 60:
        return "week"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (mins, "min")) if n]
    return " ".join(parts) or "0 min"


def cell(text: str) -> str:
    """A Markdown table cell: a '|' in a title would split the row."""
    return text.replace("|", "\\|")


def totals_of(scenario: Scenario) -> Totals:
    if scenario.total is None:
        raise ValueError(f"scenario {scenario.key!r} has no totals; compute Scenario.total before rendering")
    return scenario.total


def configured_of(plan: Plan) -> Scenario:
    if "configured" not in plan.scenarios:
        raise ValueError(f"plan for {plan.env!r} has no 'configured' scenario; the report is about that one")
    return plan.scenarios["configured"]


def cost_ratio(totals: Totals, oracle: Totals | None) -> float | None:
    if oracle is None or oracle.monthly_cost_usd <= 0:
        return None
    return totals.monthly_cost_usd / oracle.monthly_cost_usd


# Columns after the row label: (header, value of a row's Totals and its oracle Totals).
Column = tuple[str, Callable[[Totals, Totals | None], str]]


def _columns(run_length: str) -> list[Column]:
    return [
        (f"Instance-hours / {run_length}", lambda t, o: format_decimal(t.instance_hours)),
        ("Monthly cost (USD)", lambda t, o: format_usd(t.monthly_cost_usd)),
        ("Cost vs oracle", lambda t, o: format_ratio(cost_ratio(t, o))),
        ("Shortfall minutes", lambda t, o: format_count(t.shortfall_minutes)),
        ("of which in scheduled peaks", lambda t, o: format_count(t.shortfall_minutes_in_peaks)),
        ("Delayed requests", lambda t, o: format_requests(t.delayed_requests)),
        ("Rejected requests", lambda t, o: format_requests(t.rejected_requests)),
        ("p95 queue wait (s)", lambda t, o: format_decimal(t.wait_p95_seconds)),
        ("p95 wait of delayed (s)", lambda t, o: format_decimal(t.delayed_wait_p95_seconds)),
        ("Scaling activities", lambda t, o: format_count(t.scaling_activities)),
    ]


def _table(first_header: str, rows: list[tuple[str, Totals, Totals | None]], columns: list[Column]) -> list[str]:
    headers = [first_header] + [header for header, _ in columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * len(columns)) + "|"]
    for label, totals, oracle in rows:
        values = [cell(label)] + [render(totals, oracle) for _, render in columns]
        lines.append("| " + " | ".join(values) + " |")
    return lines


def worst_rejection_minute(scenario: Scenario) -> tuple[int, float, list[str]] | None:
    """The minute with the most rejected requests over all variants (earliest on a tie), and who rejected."""
    worst: tuple[int, float] | None = None
    for minute in range(scenario.minutes):
        rejected = sum(series.rejected[minute] for series in scenario.variants.values())
        if rejected > 0 and (worst is None or rejected > worst[1]):
            worst = (minute, rejected)
    if worst is None:
        return None
    minute, rejected = worst
    names = [name for name, series in scenario.variants.items() if series.rejected[minute] > 0]
    return minute, rejected, names


def _verdict(configured: Scenario, oracle: Scenario | None) -> list[str]:
    total = totals_of(configured)
    lines = []

    in_peaks = total.shortfall_minutes_in_peaks
    if in_peaks == 0:
        lines.append("- Shortfall inside scheduled peaks: none.")
    else:
        lines.append(
            f"- Shortfall inside scheduled peaks: {format_count(in_peaks)} minutes"
            f" (of {format_count(total.shortfall_minutes)} shortfall minutes in all)."
        )

    ratio = cost_ratio(total, totals_of(oracle) if oracle else None)
    goal = format_ratio(COST_GOAL_VS_ORACLE)
    if ratio is None:
        lines.append(f"- Cost vs oracle: not computed (no oracle cost in the plan); goal {goal}.")
    else:
        met = "met" if ratio <= COST_GOAL_VS_ORACLE else "not met"
        lines.append(f"- Cost vs oracle: {format_ratio(ratio)} against the {goal} goal: {met}.")

    if total.rejected_requests <= 0:
        lines.append("- Rejected requests: none.")
    else:
        line = f"- Rejected requests: {format_requests(total.rejected_requests)}"
        worst = worst_rejection_minute(configured)
        if worst is not None:
            minute, rejected, names = worst
            line += (
                f"; worst minute {format_time(configured.time_at(minute))}"
                f" with {format_requests(rejected)} rejected ({', '.join(names)})"
            )
        lines.append(line + ".")
    return lines


def render_summary(plan: Plan) -> str:
    configured = configured_of(plan)
    oracle = plan.scenarios.get("oracle")
    oracle_total = totals_of(oracle) if oracle else None
    columns = _columns(format_run_length(configured.minutes))

    def label(key: str, scenario: Scenario) -> str:
        return scenario.title + (" (lower bound)" if key == "oracle" else "")

    scenario_rows = [
        (label(key, scenario), totals_of(scenario), oracle_total) for key, scenario in plan.scenarios.items()
    ]
    lines = [f"## Capacity plan: {plan.env} ({plan.traffic_name})", ""]
    lines += _table("Scenario", scenario_rows, columns)
    for name in configured.per_variant:
        variant_rows = [
            (label(key, scenario), scenario.per_variant[name], oracle.per_variant.get(name) if oracle else None)
            for key, scenario in plan.scenarios.items()
            if name in scenario.per_variant
        ]
        lines += ["", f"### Variant {name}", ""]
        lines += _table("Scenario", variant_rows, columns)
    lines += ["", "### Verdict", ""]
    lines += _verdict(configured, oracle)
    lines += ["", "### Assumptions", ""]
    lines += [f"- {key}: {value}" for key, value in plan.assumptions.items()] or ["- none recorded"]
    return "\n".join(lines) + "\n"
