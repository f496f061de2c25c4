"""Issue 52 item 3: a variant pinned at its window's maximum while its concurrency stays above target in a
peak window pages; the capacity watch says when a release_calendar window is open."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import aws_cdk as cdk
from aws_cdk.assertions import Template

from config.loader import load_catalog, load_environment
from config.scaling_target import tracking_target
from constructs.alarm_topic import Severity
from constructs.capacity_watch import peak_windows_json
from constructs.capacity_watch_handler.handler import in_peak_window
from constructs.serving_alarms import ServingAlarms
from stacks.serving_props import alarms_props

PROD = load_environment("prod", against_deployed=False)


def _alarms(cfg):
    stack = cdk.Stack(cdk.App(), "Alarms")
    alarms = ServingAlarms(stack, "Alarms", alarms_props(cfg, load_catalog()))
    return alarms, Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")


def test_pinned_above_target_in_a_peak_window_pages():
    alarms, resources = _alarms(PROD)
    for variant in ("primary", "canary"):
        (routed,) = [r for r in alarms.routed if r.alarm.node.id == f"{variant}-pinned-in-peak"]
        assert routed.route.severity is Severity.PAGE
        (props,) = [a["Properties"] for k, a in resources.items() if k.startswith(f"Alarms{variant}pinnedinpeak")]
        (expression,) = [m["Expression"] for m in props["Metrics"] if "Expression" in m]
        target = tracking_target(PROD, variant)
        assert expression == (
            f"IF(load > {target:g} AND FILL(below_max, 1) <= 0 AND FILL(short, 1) <= 0 AND FILL(peak, 0) >= 1, 1, 0)"
        )
        names = {m["MetricStat"]["Metric"]["MetricName"] for m in props["Metrics"] if "MetricStat" in m}
        assert names == {"ConcurrentRequestsPerModel", "InstancesBelowMax", "InstancesShort", "InPeakWindow"}


def test_the_watch_knows_the_calendars_windows_in_their_own_clocks():
    windows = json.loads(peak_windows_json(PROD.release_calendar))
    friday_release = datetime(2026, 10, 30, 9, 30, tzinfo=UTC)  # 18:30 JST, Friday
    friday_morning = datetime(2026, 10, 30, 3, 30, tzinfo=UTC)  # 12:30 JST, 23:30 in New York
    us_evening = datetime(2026, 10, 29, 23, 0, tzinfo=UTC)  # 19:00 in New York (EDT)
    after_us_evening = datetime(2026, 10, 30, 3, 0, tzinfo=UTC)  # 23:00 in New York
    assert in_peak_window(windows, friday_release)
    assert not in_peak_window(windows, friday_morning)
    assert in_peak_window(windows, us_evening)
    assert not in_peak_window(windows, after_us_evening)


def test_a_window_past_midnight_is_open_the_next_morning():
    late = [{"timezone": "Asia/Tokyo", "weekdays": [4], "start": 22 * 60, "minutes": 240}]  # Fri 22:00-02:00
    assert in_peak_window(late, datetime(2026, 10, 30, 16, 30, tzinfo=UTC))  # Sat 01:30 JST
    assert not in_peak_window(late, datetime(2026, 10, 30, 17, 30, tzinfo=UTC))  # Sat 02:30 JST
