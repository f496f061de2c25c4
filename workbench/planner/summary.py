"""Markdown summary of a Plan, short enough for a pull-request comment: tables, verdict, assumptions."""

from __future__ import annotations

from collections.abc import Callable

from workbench.planner.formatting import (
    cell,
    format_count,
    format_decimal,
    format_percent,
    format_ratio,
    format_requests,
    format_run_length,
    format_usd,
)
from workbench.planner.results import Plan, Scenario, Totals
from workbench.planner.verdict import cost_figures, cost_ratio, headroom, judge


def totals_of(scenario: Scenario) -> Totals:
    if scenario.total is None:
        raise ValueError(f"scenario {scenario.key!r} has no totals; compute Scenario.total before rendering")
    return scenario.total


def configured_of(plan: Plan) -> Scenario:
    if "configured" not in plan.scenarios:
        raise ValueError(f"plan for {plan.env!r} has no 'configured' scenario; the report is about that one")
    return plan.scenarios["configured"]


# Columns after the row label: (header, value of a row's Totals and its oracle Totals).
Column = tuple[str, Callable[[Totals, Totals | None], str]]


def _columns(run_length: str) -> list[Column]:
    return [
        (f"Instance-hours / {run_length}", lambda t, o: format_decimal(t.instance_hours)),
        ("Monthly cost (USD)", lambda t, o: format_usd(t.monthly_cost_usd)),
        ("Cost vs oracle", lambda t, o: format_ratio(cost_ratio(t, o))),
        ("Failed requests", lambda t, o: format_requests(t.failed_requests)),
        ("of which in peak windows", lambda t, o: format_requests(t.failed_in_peaks)),
        (
            "Failed, worst hour",
            lambda t, o: f"{format_requests(t.failed_worst_hour)} ({format_percent(t.failed_worst_hour_percent)} %)",
        ),
        ("Failed, worst 24 h", lambda t, o: f"{format_percent(t.failed_worst_day_percent)} %"),
        ("Shed", lambda t, o: format_requests(t.shed_requests)),
        ("Rejected", lambda t, o: format_requests(t.rejected_requests)),
        ("Delayed within the objective", lambda t, o: format_requests(t.delayed_within_objective)),
        (
            "p95 / p99 wait (s)",
            lambda t, o: f"{format_decimal(t.wait_p95_seconds)} / {format_decimal(t.wait_p99_seconds)}",
        ),
        ("Shortfall minutes", lambda t, o: format_count(t.shortfall_minutes)),
        ("Scaling activities", lambda t, o: format_count(t.scaling_activities)),
    ]


def _table(first_header: str, rows: list[tuple[str, Totals, Totals | None]], columns: list[Column]) -> list[str]:
    headers = [first_header] + [header for header, _ in columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * len(columns)) + "|"]
    for label, totals, oracle in rows:
        values = [cell(label)] + [render(totals, oracle) for _, render in columns]
        lines.append("| " + " | ".join(values) + " |")
    return lines


def render_summary(plan: Plan) -> str:
    configured = configured_of(plan)
    oracle = plan.scenarios.get("oracle")
    oracle_total = totals_of(oracle) if oracle else None
    columns = _columns(format_run_length(configured.minutes))

    def label(key: str, scenario: Scenario) -> str:
        return scenario.title + (" (lower bound, redundancy floor only)" if key == "oracle" else "")

    scenario_rows = [
        (label(key, scenario), totals_of(scenario), oracle_total) for key, scenario in plan.scenarios.items()
    ]
    lines = [f"## Capacity plan: {plan.env} ({plan.traffic_name})", ""]
    if plan.outages:
        lines += [f"Scenario (--unavailable): {plan.outages}.", ""]
    lines += _table("Scenario", scenario_rows, columns)
    for name in configured.per_variant:
        variant_rows = [
            (label(key, scenario), scenario.per_variant[name], oracle.per_variant.get(name) if oracle else None)
            for key, scenario in plan.scenarios.items()
            if name in scenario.per_variant
        ]
        lines += ["", f"### Variant {name}", ""]
        lines += _table("Scenario", variant_rows, columns)
    verdict = judge(plan)
    lines += ["", f"### Verdict: {verdict.headline}", ""]
    lines += [f"- {check.text}" for check in verdict.checks]
    lines += [f"- {figure.text}" for figure in verdict.figures]
    lines += [f"- Cost as figures (not judged): {figures}." for figures in [cost_figures(plan)] if figures]
    lines += [f"- Margin: {plan.margin}." for _ in [plan.margin] if plan.margin]
    lines += [
        f"- Verdict {plan.at_seeds_provisioning}." for _ in [plan.at_seeds_provisioning] if plan.at_seeds_provisioning
    ]
    lines += [f"- Verdict {line}." for line in [headroom(plan)] if line]
    lines += [f"- Warning: {warning}" for warning in plan.warnings]
    lines += ["", "### Assumptions", ""]
    lines += [f"- {key}: {value}" for key, value in plan.assumptions.items()] or ["- none recorded"]
    return "\n".join(lines) + "\n"
