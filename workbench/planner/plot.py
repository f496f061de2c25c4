"""PNG of demand vs capacity over the run, one panel per variant, for a pull request or a runbook.

Uses matplotlib's object API with the Agg canvas: no pyplot global state and no display needed.
Each panel reads in requests/min (left) and instances (right); the time axis shows every
audience's own clock, and a daylight-saving switch inside the run is marked.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import matplotlib.dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.planner.formatting import LOCAL_TZ, format_count, format_usd
from workbench.planner.results import Plan, Scenario, VariantSeries
from workbench.planner.summary import totals_of
from workbench.planner.verdict import judge

FIGSIZE_INCHES = (16, 9)
DPI = 110
SMALLEST_PANEL = 0.3  # of the tallest panel's height, so a quiet variant stays readable
COLOURS = {
    "demand": "#1f4e79",
    "capacity": "#e07b00",
    "oracle": "#777777",
    "peak": "#fff2b3",
    "scheduled": "#c9a227",
    "shortfall": "#d62728",
    "alarm": "#7b3fa0",
    "quiet alarm": "#2ca02c",
    "dst": "#444444",
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


def _per_instance(series: VariantSeries) -> float | None:
    """Requests/min one instance serves, read back from the series (capacity / instances in service)."""
    return next((c / n for c, n in zip(series.capacity, series.in_service, strict=True) if n > 0), None)


def _hourly_max(values: list[float]) -> list[float]:
    """Each minute replaced by the maximum of its clock hour of the run (minutes 0-59, 60-119, ...)."""
    out = []
    for start in range(0, len(values), 60):
        block = values[start : start + 60]
        out += [max(block)] * len(block)
    return out


def _top(series: VariantSeries, oracle: Scenario | None) -> float:
    values = series.demand + series.capacity
    if oracle is not None and series.name in oracle.variants:
        values = values + oracle.variants[series.name].capacity
    return max(values, default=0.0) or 1.0


def _draw_variant(ax, x, series: VariantSeries, scenario: Scenario, oracle: Scenario | None, peaks) -> None:
    # Every element is labelled; the figure legend keeps the first handle of each label, so each appears once.
    for _, start, end in peaks:
        ax.axvspan(x[start], x[end], color=COLOURS["peak"], lw=0, label="peak window (traffic)")
    # The config's own windows: a thin band along the top, so they can be checked against the peaks.
    for start, end in _runs(series.in_scheduled_peak):
        ax.axvspan(
            x[start], x[end], ymin=0.97, color=COLOURS["scheduled"], alpha=0.7, lw=0, label="scheduled window (config)"
        )

    ax.plot(x[:-1], series.demand, color=COLOURS["demand"], lw=0.9, label="demand")
    # Capacity holds for the whole minute, hence a step; the extra point closes the last minute.
    ax.step(
        x, series.capacity + series.capacity[-1:], where="post", color=COLOURS["capacity"], lw=1.2, label="capacity"
    )
    if oracle is not None and series.name in oracle.variants:
        # Its hourly maximum: minute by minute the oracle follows the noise and its line would flicker.
        hourly = _hourly_max(oracle.variants[series.name].capacity)
        ax.step(
            x, hourly + hourly[-1:], where="post", color=COLOURS["oracle"], lw=0.7, ls="--", alpha=0.5,
            label="oracle capacity (hourly max)",
        )  # fmt: skip

    shed = series.shed or [0.0] * len(series.backlog)
    short = [r > 0 or b > 0 or s > 0 for r, b, s in zip(series.rejected, series.backlog, shed, strict=True)]
    for start, end in _runs(short):
        ax.axvspan(x[start], x[end], color=COLOURS["shortfall"], alpha=0.3, lw=0, label="shortfall")
    # Markers too, unlabelled: a one-minute span is under a pixel wide on a week-long axis.
    minutes = [m for m, flag in enumerate(short) if flag]
    if minutes:
        ax.plot(
            [x[m] for m in minutes], [series.demand[m] for m in minutes], ls="none", marker="v", ms=3,
            color=COLOURS["shortfall"], label="_shortfall minutes",
        )  # fmt: skip

    _draw_alarms(ax, x, scenario, series.name)
    ax.set_title(series.name, loc="left", fontsize=10)
    ax.set_ylabel("requests/min", fontsize=9)
    ax.set_ylim(0, _top(series, oracle) * 1.05)
    ax.tick_params(labelsize=8)
    ax.grid(axis="y", lw=0.3, alpha=0.5)
    per_instance = _per_instance(series)
    if per_instance:
        instances = ax.secondary_yaxis(
            "right", functions=(lambda r, k=per_instance: r / k, lambda n, k=per_instance: n * k)
        )
        instances.yaxis.set_major_locator(MaxNLocator(integer=True))
        instances.set_ylabel("instances", fontsize=9)
        instances.tick_params(labelsize=8)


def _draw_alarms(ax, x, scenario: Scenario, variant: str) -> None:
    """Alarms as ticks in a strip along the bottom edge: when they fired, without crossing the curves."""
    alarms = [e for e in scenario.events if e.kind == "alarm" and e.variant == variant]
    rows = (
        ("scale-out alarm", COLOURS["alarm"], 0.04, [e for e in alarms if "scale-in" not in e.text]),
        ("scale-in alarm", COLOURS["quiet alarm"], 0.015, [e for e in alarms if "scale-in" in e.text]),
    )
    for label, colour, height, events in rows:
        if events:
            ax.plot(
                [x[e.minute] for e in events], [height] * len(events), ls="none", marker="|", ms=5, mew=0.8,
                color=colour, alpha=0.6, transform=ax.get_xaxis_transform(), label=label,
            )  # fmt: skip


def _annotate_traffic_events(ax, x: list[float], traffic_events: list[tuple[str, int, int]]) -> None:
    # x in data coordinates, y in axes fraction: the brackets stay at the top whatever the demand scale.
    if traffic_events:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top + 0.15 * (top - bottom))  # headroom so the labels sit above the curves
    transform = ax.get_xaxis_transform()
    for i, (name, start, end) in enumerate(traffic_events):
        y = 0.90 - 0.06 * (i % 2)  # alternate two rows so neighbouring names do not overlap
        ax.plot([x[start], x[end]], [y, y], transform=transform, color="black", lw=0.8)
        ax.text((x[start] + x[end]) / 2, y + 0.01, name, transform=transform, ha="center", va="bottom", fontsize=7)


def dst_switches(start: datetime, minutes: int, zone: ZoneInfo) -> list[tuple[datetime, str, str]]:
    """(UTC instant, abbreviation before, after) of each offset change of `zone` inside the run."""
    switches, hour = [], timedelta(hours=1)
    end = start + timedelta(minutes=minutes)
    moment = start
    while moment < end:  # offsets change on the hour in every zone the planner meets; refine within it
        following = min(moment + hour, end)
        if moment.astimezone(zone).utcoffset() != following.astimezone(zone).utcoffset():
            at = next(
                moment + timedelta(minutes=m)
                for m in range(1, 61)
                if (moment + timedelta(minutes=m)).astimezone(zone).utcoffset() != moment.astimezone(zone).utcoffset()
            )
            switches.append((at, moment.astimezone(zone).tzname(), at.astimezone(zone).tzname()))
        moment = following
    return switches


def _clocks(plan: Plan) -> list[ZoneInfo]:
    zones = [ZoneInfo(name) for _, name in plan.time_zones] or [LOCAL_TZ]
    return list(dict.fromkeys(zones))


def _time_axes(axes, plan: Plan, scenario: Scenario, x) -> None:
    """The first audience's clock under the bottom panel, the second's over the top panel (more are not shown)."""
    bottom = axes[-1]
    bottom.set_xlim(x[0], x[-1])
    audiences = {name: audience for audience, name in plan.time_zones}
    for row, zone in enumerate(_clocks(plan)[:2]):
        axis = bottom if row == 0 else axes[0].secondary_xaxis("top")
        axis.xaxis.set_major_locator(mdates.DayLocator(tz=zone))
        axis.xaxis.set_major_formatter(mdates.DateFormatter("%a %d", tz=zone))
        axis.xaxis.set_minor_locator(mdates.HourLocator(byhour=range(0, 24, 6), tz=zone))
        axis.tick_params(labelsize=8)
        audience = audiences.get(zone.key)
        axis.set_xlabel(f"{zone.key} local time" + (f" ({audience})" if audience else ""), fontsize=9)
        for at, before, after in dst_switches(scenario.start, scenario.minutes, zone):
            when = mdates.date2num(at)
            for ax in axes:
                ax.axvline(when, color=COLOURS["dst"], lw=0.8, ls="--", label="_dst")
            axes[0].text(
                when, 0.5, f" {zone.key}: {before} → {after} ", transform=axes[0].get_xaxis_transform(),
                rotation=90, ha="right", va="center", fontsize=7, color=COLOURS["dst"],
            )  # fmt: skip


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
    tops = [_top(series, oracle) for series in scenario.variants.values()]
    heights = [max(top, SMALLEST_PANEL * max(tops)) for top in tops]
    axes = figure.subplots(
        nrows=len(scenario.variants), sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights}
    )[:, 0]
    for ax, series in zip(axes, scenario.variants.values(), strict=True):
        _draw_variant(ax, x, series, scenario, oracle, plan.peak_windows)
    _annotate_traffic_events(axes[0], x, plan.traffic_events)
    _time_axes(axes, plan, scenario, x)

    handles, labels = {}, []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    figure.legend([handles[label] for label in labels], labels, loc="outside right upper", fontsize=8)
    title = (
        f"{plan.env} ({plan.traffic_name}) — {scenario.title} — {format_usd(total.monthly_cost_usd)}/month,"
        f" {format_count(total.shortfall_minutes)} shortfall minutes"
    )
    if scenario_key == "configured":  # the verdict judges the configured fleet only
        title += f" — budget {judge(plan).headline}"
    figure.suptitle(title, fontsize=12)
    return figure


def draw_plot(plan: Plan, path: Path, scenario_key: str = "configured") -> None:
    # No "Software" entry: the PNG then depends only on the plan, so two renders can be compared byte for byte.
    build_figure(plan, scenario_key).savefig(path, format="png", metadata={"Software": None})
