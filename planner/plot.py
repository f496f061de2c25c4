"""PNG of demand vs capacity over the run, one panel per variant, for a pull request or a runbook.

Uses matplotlib's object API with the Agg canvas: no pyplot global state and no display needed.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from planner.formatting import LOCAL_TZ, format_count, format_usd
from planner.results import Plan, Scenario, VariantSeries
from planner.summary import totals_of

FIGSIZE_INCHES = (16, 9)
DPI = 110
COLOURS = {
    "demand": "#1f4e79",
    "capacity": "#e07b00",
    "oracle": "#555555",
    "peak": "#fff2b3",
    "shortfall": "#d62728",
    "alarm": "#7b3fa0",
    "quiet alarm": "#2ca02c",
}


def _runs(flags: list[bool]) -> list[tuple[int, int]]:
    """Contiguous runs of True as (first minute, minute after the last)."""
    runs, start = [], None
    for minute, flag in enumerate(flags):
        if flag and start is None:
            start = minute
        elif not flag and start is not None:
            runs.append((start, minute))
            start = None
    if start is not None:
        runs.append((start, len(flags)))
    return runs


def _draw_variant(ax, x: list[float], series: VariantSeries, scenario: Scenario, oracle: Scenario | None) -> None:
    # Every element is labelled; the figure legend keeps the first handle of each label, so each appears once.
    for start, end in _runs(series.in_scheduled_peak):
        ax.axvspan(x[start], x[end], color=COLOURS["peak"], lw=0, label="scheduled peak")

    ax.plot(x[:-1], series.demand, color=COLOURS["demand"], lw=0.9, label="demand")
    # Capacity holds for the whole minute, hence a step; the extra point closes the last minute.
    ax.step(
        x, series.capacity + series.capacity[-1:], where="post", color=COLOURS["capacity"], lw=1.2, label="capacity"
    )
    if oracle is not None and series.name in oracle.variants:
        capacity = oracle.variants[series.name].capacity
        ax.step(
            x,
            capacity + capacity[-1:],
            where="post",
            color=COLOURS["oracle"],
            lw=0.6,
            ls="--",
            alpha=0.6,
            label="oracle capacity",
        )

    short = [rejected > 0 or backlog > 0 for rejected, backlog in zip(series.rejected, series.backlog, strict=True)]
    for start, end in _runs(short):
        ax.axvspan(x[start], x[end], color=COLOURS["shortfall"], alpha=0.2, lw=0)
    # Markers too: a one-minute span is under a pixel wide on a week-long axis.
    minutes = [m for m, flag in enumerate(short) if flag]
    if minutes:
        ax.plot(
            [x[m] for m in minutes],
            [series.demand[m] for m in minutes],
            ls="none",
            marker="v",
            ms=3,
            color=COLOURS["shortfall"],
            label="shortfall",
        )

    # Scale-in alarms are many and quiet; drawn fainter so the scale-out ones stand out.
    alarms = [event for event in scenario.events if event.kind == "alarm" and event.variant == series.name]
    for event in alarms:
        if "scale-in" in event.text:
            ax.axvline(x[event.minute], color=COLOURS["quiet alarm"], lw=0.4, alpha=0.35, label="scale-in alarm")
        else:
            ax.axvline(x[event.minute], color=COLOURS["alarm"], lw=0.6, alpha=0.8, label="scale-out alarm")

    ax.set_title(series.name, loc="left", fontsize=10)
    ax.set_ylabel("requests/min", fontsize=9)
    ax.set_ylim(bottom=0)
    ax.tick_params(labelsize=8)
    ax.grid(axis="y", lw=0.3, alpha=0.5)


def _annotate_traffic_events(ax, x: list[float], traffic_events: list[tuple[str, int, int]]) -> None:
    # x in data coordinates, y in axes fraction: the brackets stay at the top whatever the demand scale.
    if traffic_events:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top + 0.15 * (top - bottom))  # headroom so the labels sit above the curves
    transform = ax.get_xaxis_transform()
    for i, (name, start, end) in enumerate(traffic_events):
        y = 0.93 - 0.06 * (i % 2)  # alternate two rows so neighbouring names do not overlap
        ax.plot([x[start], x[end]], [y, y], transform=transform, color="black", lw=0.8)
        ax.text((x[start] + x[end]) / 2, y + 0.01, name, transform=transform, ha="center", va="bottom", fontsize=7)


def build_figure(plan: Plan, scenario_key: str = "configured") -> Figure:
    """The figure draw_plot saves; separate so its content can be inspected without a file."""
    if scenario_key not in plan.scenarios:
        raise ValueError(f"plan has no scenario {scenario_key!r}; it has {', '.join(plan.scenarios)}")
    scenario = plan.scenarios[scenario_key]
    oracle = plan.scenarios.get("oracle") if scenario_key != "oracle" else None
    total = totals_of(scenario)
    # One x value per minute boundary (minutes + 1) so spans and steps can close the last minute.
    x = list(mdates.date2num([scenario.time_at(m) for m in range(scenario.minutes + 1)]))

    figure = Figure(figsize=FIGSIZE_INCHES, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(nrows=len(scenario.variants), sharex=True, squeeze=False)[:, 0]
    for ax, series in zip(axes, scenario.variants.values(), strict=True):
        _draw_variant(ax, x, series, scenario, oracle)
    _annotate_traffic_events(axes[0], x, plan.traffic_events)

    bottom = axes[-1]
    bottom.set_xlim(x[0], x[-1])
    bottom.xaxis.set_major_locator(mdates.DayLocator(tz=LOCAL_TZ))
    bottom.xaxis.set_major_formatter(mdates.DateFormatter("%a %d", tz=LOCAL_TZ))
    bottom.xaxis.set_minor_locator(mdates.HourLocator(byhour=range(0, 24, 6), tz=LOCAL_TZ))
    bottom.set_xlabel("Asia/Tokyo local time", fontsize=9)

    handles, labels = {}, []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    figure.legend([handles[label] for label in labels], labels, loc="outside right upper", fontsize=8)
    figure.suptitle(
        f"{plan.env} — {scenario.title} — {format_usd(total.monthly_cost_usd)}/month,"
        f" {format_count(total.shortfall_minutes)} shortfall minutes",
        fontsize=12,
    )
    return figure


def draw_plot(plan: Plan, path: Path, scenario_key: str = "configured") -> None:
    # No "Software" entry: the PNG then depends only on the plan, so two renders can be compared byte for byte.
    build_figure(plan, scenario_key).savefig(path, format="png", metadata={"Software": None})
