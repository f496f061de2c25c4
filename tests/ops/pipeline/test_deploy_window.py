"""`make deploy` / `python -m ops deploy` refuse to start a blue/green update that overlaps a peak window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from config import load_environment
from config.deploy_window import check, deploy_duration, worst_case_duration
from config.schedules import Cron, time_zone
from ops.pipeline.deploy_window import REFUSED, main

PROD = load_environment("prod")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def firing(name: str, after: datetime) -> tuple[datetime, datetime]:
    """The first (start, end) of prod's primary window `name` at or after `after`, in the window's zone."""
    (window,) = (w for w in PROD.autoscaling["primary"].schedules if w.name == name)
    zone = time_zone(window.timezone)
    opened = Cron(window.start).next_firing(zone, after)
    return opened, Cron(window.end).next_firing(zone, opened)


def test_prod_deploy_duration_comes_from_the_config() -> None:
    duration, how = deploy_duration(PROD)
    assert duration.total_seconds() == 4 * 60 + 600 + 600  # ALL_AT_ONCE: one bake
    assert how == (
        "green fleet start 240 s (planning.provisioning_minutes) + 1 x 600 s bake (deployment.wait_interval_seconds, "
        "ALL_AT_ONCE) + 600 s (deployment.termination_wait_seconds)"
    )


def test_the_guard_judges_the_worst_case_the_execution_timeout_allows() -> None:
    duration, how = worst_case_duration(PROD)
    # 900 s provisioning + 900 s download + 900 s start + 600 s bake + 600 s termination + 900 s image pull margin
    assert duration.total_seconds() == 4800
    assert how.startswith("deployment timeout 4800 s, derived: provisioning timeout 900 s + model download 900 s")


def test_a_friday_deploy_at_16_50_jst_is_refused_though_it_usually_ends_by_17_14(capsys) -> None:
    # Expected 24 min (ends 17:14), worst case 80 min (18:10): past the 17:30 pre-scale of the release window.
    assert main(["prod", "--now", "2026-11-27T16:50:00+09:00"]) == REFUSED
    err = capsys.readouterr().err
    assert "takes about 24 min and at worst 80 min" in err
    assert "reaches the pre-scale of the peak window primary 'tokyo-friday-release'" in err


def test_a_deploy_ending_inside_the_magazine_day_window_is_refused_with_the_next_safe_start(capsys) -> None:
    # Ten minutes before Monday's tokyo-magazine-days pre-scale (prod's config): the update (60 min at worst)
    # would run into the window.
    opened, closed = firing("tokyo-magazine-days", datetime(2026, 11, 23, tzinfo=time_zone("Asia/Tokyo")))
    assert f"{opened:%a}" == "Mon"
    now = opened - timedelta(minutes=10)
    worst, _ = worst_case_duration(PROD)
    assert opened < now + worst
    assert main(["prod", "--now", now.isoformat()]) == REFUSED
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: refusing to deploy prod at {now:%a %Y-%m-%d %H:%M} JST ({now.astimezone(UTC):%H:%M} UTC): the blue/green"
    )
    assert (
        f"reaches the pre-scale of the peak window primary 'tokyo-magazine-days' {opened:%a %Y-%m-%d %H:%M}-"
        f"{closed:%H:%M} Asia/Tokyo" in err
    )
    assert "(autoscaling.primary.schedules: tokyo-magazine-days)" in err
    # Open from the window's end until the US-Eastern evening's pre-scale (in EST) minus the worst case.
    us_eastern, _ = firing("us-eastern-evening-peak", closed)
    assert us_eastern.astimezone(UTC) - closed.astimezone(UTC) > worst
    latest = (us_eastern - worst).astimezone(closed.tzinfo)
    assert (
        f"next safe window opens {closed:%a %Y-%m-%d %H:%M} JST ({closed.astimezone(UTC):%H:%M} UTC), "
        f"latest start {latest:%a %Y-%m-%d %H:%M} JST ({latest.astimezone(UTC):%H:%M} UTC)" in err
    )
    assert "to deploy during the peak anyway: make deploy ENV=prod FORCE_PEAK=1" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("now", "clash"),
    [
        ("2026-11-23T08:40:00", "tokyo-magazine-days"),  # Mon 17:40 JST: inside an open window
        ("2026-11-24T16:10:00", None),  # Wed 01:10 JST, inside tokyo-off-peak: it only caps the ceiling, no peak
        # The US-Eastern peak moves in UTC with DST:
        ("2026-10-30T21:30:00", "us-eastern-evening-peak"),  # Fri, EDT: the US evening starts 17:45 EDT = 21:45 UTC
        ("2026-11-06T21:00:00", None),  # Fri, EST (clocks went back 1 Nov): pre-scale 22:30 UTC, 21:00 + 80 min
        ("2026-11-06T22:20:00", "us-eastern-evening-peak"),  # EST: 22:20 + 80 min (worst case) runs past 22:45 UTC
    ],
)
def test_which_window_a_deploy_would_overlap(now: str, clash: str | None) -> None:
    verdict = check(PROD, utc(now))
    assert (verdict.clash and verdict.clash.name) == clash
    if now == "2026-11-23T08:40:00":
        assert verdict.safe_start == utc("2026-11-23T12:00:00")


def test_the_next_safe_start_is_given_in_the_windows_own_zone_across_dst(capsys) -> None:
    # Ten minutes before the US-Eastern evening's pre-scale on the first Friday after US clocks went back (1 Nov).
    opened, closed = firing("us-eastern-evening-peak", datetime(2026, 11, 6, tzinfo=time_zone("America/New_York")))
    assert f"{opened:%a %Z}" == "Fri EST" and f"{closed:%Z}" == "EST"
    now = opened - timedelta(minutes=10)
    assert main(["prod", "--now", now.astimezone(UTC).isoformat()]) == REFUSED
    err = capsys.readouterr().err
    assert f"primary 'us-eastern-evening-peak' {opened:%a %Y-%m-%d %H:%M}-{closed:%H:%M} America/New_York" in err
    assert f"next safe window opens {closed:%a %Y-%m-%d %H:%M} EST ({closed.astimezone(UTC):%H:%M} UTC)" in err


def test_during_peak_goes_ahead_with_a_warning(capsys) -> None:
    assert main(["prod", "--during-peak", "--now", "2026-11-23T08:20:00+00:00"]) == 0
    assert capsys.readouterr().out.startswith("warning (FORCE_PEAK): deploying prod at Mon 2026-11-23 17:20 JST")


def test_a_safe_time_passes(capsys) -> None:
    assert main(["prod", "--now", "2026-11-24T04:00:00+00:00"]) == 0  # Tue 13:00 JST, Mon 23:00 EST
    assert capsys.readouterr().out == "deploy window: no peak window of prod in the next 80 min\n"


def test_a_time_without_offset_is_refused(capsys) -> None:
    assert main(["prod", "--now", "2026-11-24T04:00:00"]) == 2
    assert capsys.readouterr().err == "error: --now needs a UTC offset, got 2026-11-24T04:00:00\n"
