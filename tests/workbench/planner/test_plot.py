"""The demand-vs-capacity PNG on small hand-built plans (3 hours, two variants)."""

from __future__ import annotations

from datetime import UTC, datetime

import matplotlib.colors
import matplotlib.dates as mdates
import matplotlib.image
import pytest
from matplotlib.patches import Rectangle

from workbench.planner.plot import COLOURS, build_figure, draw_plot
from workbench.planner.results import Event, Plan, Scenario, Totals, VariantSeries

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
START = datetime(2026, 5, 27, 15, 0, tzinfo=UTC)  # Thu 28 May 00:00 in Tokyo
MINUTES = 180
TOTALS = Totals(7.0, 1180.0, 8, 5, 12_345.6, 80.0, 12.3, 75.0, 2)


def series(name: str, instances: int, peak: bool, short_minutes: range = range(0)) -> VariantSeries:
    # Demand 1.5x capacity in short_minutes (backlog there), otherwise half of it.
    capacity = 600.0 * instances
    return VariantSeries(
        name=name,
        demand=[capacity * (1.5 if m in short_minutes else 0.5) for m in range(MINUTES)],
        in_service=[instances] * MINUTES,
        billed=[instances] * MINUTES,
        capacity=[capacity] * MINUTES,
        backlog=[capacity * 0.5 if m in short_minutes else 0.0 for m in range(MINUTES)],
        rejected=[0.0] * MINUTES,
        wait_seconds=[30.0 if m in short_minutes else 0.0 for m in range(MINUTES)],
        in_scheduled_peak=[peak and 60 <= m < 120 for m in range(MINUTES)],
    )


def scenario(key: str, title: str, events: list[Event], short: bool = True) -> Scenario:
    return Scenario(
        key=key,
        title=title,
        start=START,
        variants={
            "chat": series("chat", 2, peak=True, short_minutes=range(60, 65) if short else range(0)),
            "rerank": series("rerank", 1, peak=False, short_minutes=range(100, 103) if short else range(0)),
        },
        events=events,
        total=TOTALS,
    )


def full_plan() -> Plan:
    alarms = [
        Event(61, "chat", "alarm", "QueueDepth scale-out alarm"),
        Event(101, "rerank", "alarm", "QueueDepth scale-out alarm"),
        Event(150, "chat", "alarm", "target tracking SageMakerVariantInvocationsPerInstance scale-in"),
        Event(62, "chat", "scale", "desired 2 -> 3"),
    ]
    return Plan(
        env="prod",
        traffic_name="golden-week",
        scenarios={
            "configured": scenario("configured", "Configured: schedules + reactive policies", alarms),
            "oracle": scenario("oracle", "Oracle: perfect foresight", [], short=False),
        },
        assumptions={},
        traffic_events=[("flash sale", 95, 110), ("newsletter", 150, 180)],
        peak_windows=[("tokyo evening", 30, 90)],
        time_zones=[("tokyo", "Asia/Tokyo"), ("us-eastern", "America/New_York")],
    )


def bare_plan() -> Plan:
    """No oracle, no events of any kind, nothing short."""
    return Plan(
        env="dev",
        traffic_name="quiet",
        scenarios={"configured": scenario("configured", "Configured", [], short=False)},
        assumptions={},
    )


def legend_labels(plan: Plan, scenario_key: str = "configured") -> list[str]:
    figure = build_figure(plan, scenario_key)
    return [text.get_text() for text in figure.legends[0].get_texts()]


def assert_png(path):
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    height, width, _ = matplotlib.image.imread(path).shape
    assert width > height
    return data


def test_draw_plot_writes_a_wide_png_that_reads_back(tmp_path):
    path = tmp_path / "plan.png"
    draw_plot(full_plan(), path)
    assert_png(path)


def test_draw_plot_works_without_oracle_or_events(tmp_path):
    path = tmp_path / "bare.png"
    draw_plot(bare_plan(), path)
    assert_png(path)


def test_two_renders_of_the_same_plan_are_identical(tmp_path):
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    draw_plot(full_plan(), first)
    draw_plot(full_plan(), second)
    assert first.read_bytes() == second.read_bytes()


def panels(figure):
    return [ax for ax in figure.axes if ax.get_title(loc="left")]


def test_one_panel_per_variant_sharing_the_time_axis():
    chat, rerank = panels(build_figure(full_plan()))
    assert [chat.get_title(loc="left"), rerank.get_title(loc="left")] == ["chat", "rerank"]
    assert chat.get_shared_x_axes().joined(chat, rerank)


def test_legend_names_each_element_once():
    assert legend_labels(full_plan()) == [
        "peak window (traffic)",
        "scheduled window (config)",
        "demand",
        "capacity",
        "oracle capacity (hourly max)",
        "shortfall",
        "scale-out alarm",
        "scale-in alarm",
    ]


def test_legend_of_a_bare_plan_has_no_oracle_shortfall_or_alarm():
    assert legend_labels(bare_plan()) == ["scheduled window (config)", "demand", "capacity"]


def legend_handle(figure, label: str):
    legend = figure.legends[0]
    return dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles, strict=True))[label]


def test_shortfall_shading_is_what_the_legend_shows():
    figure = build_figure(full_plan())
    handle = legend_handle(figure, "shortfall")
    assert isinstance(handle, Rectangle)  # the shaded span, not only a marker
    assert handle.get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(COLOURS["shortfall"]))


def test_each_panel_has_an_instance_count_axis():
    figure = build_figure(full_plan())
    figure.canvas.draw()  # a secondary axis takes its limits from its panel when drawn
    for panel, per_instance in zip(panels(figure), (600.0, 600.0), strict=True):
        (instances,) = [child for child in panel.child_axes if child.get_ylabel() == "instances"]
        assert instances.get_ylim() == pytest.approx([limit / per_instance for limit in panel.get_ylim()])
        assert all(tick == int(tick) for tick in instances.get_yticks())


def test_alarms_and_oracle_are_a_quiet_layer():
    figure = build_figure(full_plan())
    chat = panels(figure)[0]
    alarms = [line for line in chat.lines if line.get_label().endswith("alarm")]
    assert len(alarms) == 2
    for line in alarms:  # short ticks along the bottom edge, not lines through the curves
        _, y_in_axes_fraction = line.get_transform().contains_branch_seperately(chat.transAxes)
        assert y_in_axes_fraction and max(line.get_ydata()) <= 0.05
    (oracle,) = [line for line in chat.lines if line.get_label().startswith("oracle")]
    assert oracle.get_alpha() <= 0.5 and oracle.get_linewidth() <= 0.8


def test_panels_are_sized_to_what_they_show():
    # chat shows up to 1,200 requests/min, rerank up to 600: rerank gets the smaller panel.
    chat, rerank = panels(build_figure(full_plan()))
    assert rerank.get_position().height < 0.75 * chat.get_position().height


def test_both_audiences_clocks_label_the_time_axis():
    figure = build_figure(full_plan())
    figure.canvas.draw()
    top, bottom = panels(figure)
    assert bottom.get_xlabel() == "Asia/Tokyo local time (tokyo)"
    assert [child.get_xlabel() for child in top.child_axes if child.get_xlabel()] == [
        "America/New_York local time (us-eastern)"
    ]


def test_the_dst_change_is_marked():
    plan = full_plan()
    dst_start = datetime(2026, 11, 1, 4, 0, tzinfo=UTC)  # New York leaves EDT at 06:00 UTC: minute 120
    for scenario in plan.scenarios.values():
        scenario.start = dst_start
    figure = build_figure(plan)
    texts = [text.get_text() for ax in panels(figure) for text in ax.texts]
    assert any("America/New_York" in text and "EDT" in text and "EST" in text for text in texts)
    marks = [line for line in panels(figure)[0].lines if line.get_label() == "_dst"]
    assert [mdates.num2date(line.get_xdata()[0]) for line in marks] == [datetime(2026, 11, 1, 6, 0, tzinfo=UTC)]
    assert not [line for line in panels(build_figure(full_plan()))[0].lines if line.get_label() == "_dst"]


def test_title_gives_env_traffic_scenario_cost_shortfall_and_verdict():
    title = build_figure(full_plan())._suptitle.get_text()
    assert title == (
        "prod (golden-week) — Configured: schedules + reactive policies — $1,180/month, 8 shortfall minutes"
        " — budget not met"
    )
    assert build_figure(full_plan(), "oracle")._suptitle.get_text().endswith("8 shortfall minutes")


def test_day_ticks_are_labelled_in_tokyo_time():
    figure = build_figure(full_plan())
    figure.canvas.draw()
    labels = [label.get_text() for label in panels(figure)[1].get_xticklabels() if label.get_text()]
    assert labels == ["Thu 28"]  # the run starts at 00:00 Thursday in Tokyo (Wednesday 15:00 UTC)


def test_traffic_events_are_annotated_on_the_first_panel():
    chat, rerank = panels(build_figure(full_plan()))
    assert [text.get_text() for text in chat.texts] == ["flash sale", "newsletter"]
    assert not rerank.texts


def test_unknown_scenario_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no scenario 'reactive'"):
        draw_plot(full_plan(), tmp_path / "x.png", scenario_key="reactive")
