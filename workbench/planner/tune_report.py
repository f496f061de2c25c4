"""What `bin/plan ENV --tune` prints and writes: the frontier table, its plot, the chosen point, and
(--write-config) the chosen point written into the environment's file through config/editor.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from config.editor import edit_environment_file
from config.loader import environment_file
from config.schema import EnvironmentConfig
from workbench.planner.formatting import format_percent, format_requests, format_usd
from workbench.planner.tune import Outcome, Point, Search, shift_cron


def describe(cfg: EnvironmentConfig, point: Point) -> str:
    """'share 0.55; tokyo-evening-peak 17-21, ...; canary floor 1; starts +0 min'."""
    names = [w.name for s in cfg.autoscaling.values() for w in s.schedules]
    windows = ", ".join(f"{name} {low}-{high}" for name, (low, high) in zip(names, point.windows, strict=True))
    parts = [f"share {point.share:g}" if point.share is not None else "", windows]
    others = list(cfg.autoscaling)[1:]
    parts += [f"{name} floor {floor}" for name, floor in zip(others, point.floors, strict=True)]
    parts.append(f"window starts {point.shift:+d} min")
    parts += [f"{name} max {m}" for name, m in zip(cfg.autoscaling, point.maxima, strict=False)]
    return "; ".join(p for p in parts if p)


def frontier_table(cfg: EnvironmentConfig, result: Search) -> str:
    lines = [
        "| Monthly cost | Failed, worst hour | Failed in peaks | Meets the budget | Point |",
        "|---:|---:|---:|:---:|---|",
    ]
    for o in result.frontier:
        mark = " (chosen)" if o.point == result.chosen.point else ""
        lines.append(
            f"| {format_usd(o.monthly_cost_usd)} | {format_requests(o.failed_worst_hour)}"
            f" ({format_percent(o.failed_worst_hour_percent)} %) | {format_requests(o.failed_in_peaks)} | "
            f"{'yes' if o.meets else 'no'} | {describe(cfg, o.point)}{mark} |"
        )
    return "\n".join(lines)


def summary(cfg: EnvironmentConfig, result: Search, seconds: float) -> str:
    chosen, start = result.chosen, result.start
    verdict = "meets the budget" if chosen.meets else "meets no budget: nothing in the space does"
    return "\n".join([
        f"## Tuning {cfg.name}: {len(result.evaluated)} configurations in {seconds:.0f} s",
        "",
        f"Configured (window maxima raised to the 1.2 x rule): {_line(start)}",
        *_bare_line(result),
        f"Chosen: {_line(chosen)}; {verdict}",
        f"  {describe(cfg, chosen.point)}",
        "",
        "### Frontier: cost against failed requests in the worst hour",
        "",
        frontier_table(cfg, result),
    ]) + "\n"  # fmt: skip


def _bare_line(result: Search) -> list[str]:
    """The cheapest at the bare assumptions beside the chosen one: what the margin costs a month."""
    bare = result.bare
    if bare is None or bare.point == result.chosen.point:
        return []
    cost = result.chosen.monthly_cost_usd - bare.monthly_cost_usd
    return [
        f"Cheapest at the bare assumptions (no stress set): {_line(bare)}",
        f"What the margin costs: ${cost:,.0f} a month (chosen, holding planning.stress, against the bare one)",
    ]


def _line(o: Outcome) -> str:
    return (
        f"{format_usd(o.monthly_cost_usd)}/month, {format_requests(o.failed_in_peaks)} failed in peaks, "
        f"{format_requests(o.failed_worst_hour)} in the worst hour ({format_percent(o.failed_worst_hour_percent)} %)"
    )


def draw_frontier(result: Search, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for meets, colour, label in ((True, "tab:green", "meets the budget"), (False, "tab:grey", "does not")):
        points = [o for o in result.evaluated if o.meets == meets]
        ax.scatter([o.monthly_cost_usd for o in points], [o.failed_worst_hour for o in points], s=12, c=colour,
                   label=label)  # fmt: skip
    frontier = result.frontier
    ax.plot([o.monthly_cost_usd for o in frontier], [o.failed_worst_hour for o in frontier], c="tab:blue",
            label="frontier")  # fmt: skip
    ax.scatter([result.chosen.monthly_cost_usd], [result.chosen.failed_worst_hour], s=80, marker="*", c="tab:red",
               label="chosen", zorder=3)  # fmt: skip
    ax.set_xlabel("monthly cost (USD)")
    ax.set_ylabel("failed requests in the worst hour")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _raise_initial_count(doc, name: str, floor: int) -> None:
    """A variant starts within its range (config/checks/scaling.py): a raised floor raises its initial count."""
    for variant in doc["variants"]:
        if variant["name"] == name and variant["initial_instance_count"] < floor:
            variant["initial_instance_count"] = floor


def write_point(cfg: EnvironmentConfig, outcome: Outcome, digest: str, bare: Outcome | None = None) -> str:
    """Write the chosen point and planning.frontier into ENV's file (validated, comments kept); the diff.

    Every window's maximum is the tuner's: the search sizes each for its fallback night (planner.tune
    fallback_maxima) and judges the nights without the preferred type (planning.stress), so the maximum a
    hand once raised for that night is now the search's to set. A variant's max_capacity rises to its
    largest window's."""
    point = outcome.point

    def change(doc) -> None:
        windows = iter(point.windows)
        for index, name in enumerate(cfg.autoscaling):
            scaling = doc["autoscaling"][name]
            tracking = scaling["target_tracking"]
            if point.share is not None and "target_share_of_concurrency" in tracking:
                tracking["target_share_of_concurrency"] = point.share
            for window in scaling.get("schedules", []):
                floor, maximum = next(windows)
                window["min_capacity"] = floor
                window["max_capacity"] = maximum
                scaling["max_capacity"] = max(scaling["max_capacity"], maximum)
                window["start"] = shift_cron(str(window["start"]), point.shift)
            if point.maxima:
                scaling["max_capacity"] = max(scaling["max_capacity"], point.maxima[index])
            if index > 0:
                scaling["min_capacity"] = point.floors[index - 1]
                _raise_initial_count(doc, name, point.floors[index - 1])
        frontier = {"monthly_cost_usd": round(outcome.monthly_cost_usd, 2)}
        if bare is not None:
            frontier["bare_monthly_cost_usd"] = round(bare.monthly_cost_usd, 2)
        frontier |= {"inputs": digest, "tuned_at": datetime.now(UTC).strftime("%Y-%m-%d")}
        doc["planning"]["frontier"] = frontier

    edit = edit_environment_file(environment_file(cfg.name), change)
    edit.write()
    return edit.diff()
