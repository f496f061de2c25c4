"""Recorded traffic as CSV: the format `read_csv` accepts and `write_csv` writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from workbench.planner.reference_week import reference_week
from workbench.planner.traffic import TrafficError, read_csv, write_csv


def write_rows(tmp_path: Path, rows: list[str], header: str = "timestamp,requests") -> Path:
    path = tmp_path / "traffic.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def minute_rows(count: int, start: str = "2026-10-29T00:00:00+09:00", value: str = "100") -> list[str]:
    first = datetime.fromisoformat(start)
    return [f"{(first + timedelta(minutes=i)).isoformat()},{value}" for i in range(count)]


def test_csv_round_trip(tmp_path):
    week = reference_week()
    path = tmp_path / "week.csv"
    write_csv(week, path)
    again = read_csv(path)
    assert again.name == "week.csv"
    assert again.start == week.start
    assert again.requests_per_minute == week.requests_per_minute


def test_csv_accepts_offsets_and_z(tmp_path):
    rows = minute_rows(60, start="2026-10-28T15:00:00Z")
    profile = read_csv(write_rows(tmp_path, rows))
    assert profile.start == datetime(2026, 10, 28, 15, tzinfo=UTC)
    assert profile.start == read_csv(write_rows(tmp_path, minute_rows(60))).start  # +09:00 midnight, same instant
    assert profile.requests_per_minute == (100.0,) * 60
    assert profile.time_at(59) == datetime(2026, 10, 28, 15, 59, tzinfo=UTC)


def replace_row(rows: list[str], index: int, row: str) -> list[str]:
    return [*rows[:index], row, *rows[index + 1 :]]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (
            replace_row(minute_rows(60), 15, "2026-10-29T00:15:00+09:00,-3"),
            "traffic.csv line 17: requests must be a non-negative number, got '-3'",
        ),
        (
            replace_row(minute_rows(60), 3, "2026-10-29T00:03:00+09:00,lots"),
            "traffic.csv line 5: requests must be a non-negative number, got 'lots'",
        ),
        (
            replace_row(minute_rows(60), 3, "2026-10-29T00:03:00+09:00,nan"),
            "traffic.csv line 5: requests must be a non-negative number, got 'nan'",
        ),
        (
            minute_rows(3) + minute_rows(60, start="2026-10-29T00:04:00+09:00"),
            "traffic.csv line 5: timestamp 2026-10-29T00:04:00+09:00 is not one minute after the previous row (2026-10-28T15:02:00+00:00)",
        ),
        (
            minute_rows(3) + minute_rows(60, start="2026-10-29T00:02:00+09:00"),
            "traffic.csv line 5: timestamp 2026-10-29T00:02:00+09:00 is not one minute after the previous row",
        ),
        (
            replace_row(minute_rows(60), 0, "29/10/2026 00:00,100"),
            "traffic.csv line 2: timestamp must be ISO-8601 with an offset or Z (e.g. 2026-10-29T00:00:00+09:00), got '29/10/2026 00:00'",
        ),
        (
            replace_row(minute_rows(60), 0, "2026-10-29T00:00:00,100"),
            "traffic.csv line 2: timestamp must be ISO-8601 with an offset or Z",
        ),
        (
            replace_row(minute_rows(60), 0, "2026-10-29T00:00:30Z,100"),
            "traffic.csv line 2: timestamp must be on a whole minute",
        ),
        (
            replace_row(minute_rows(60), 7, "2026-10-29T00:07:00+09:00"),
            "traffic.csv line 9: expected 2 fields (timestamp,requests), got 1",
        ),
        (minute_rows(59), "traffic.csv: 59 data rows; at least 60 (one per minute) are needed"),
    ],
)
def test_csv_errors_say_where_and_what(tmp_path, rows, expected):
    with pytest.raises(TrafficError) as error:
        read_csv(write_rows(tmp_path, rows))
    assert expected in str(error.value)


def test_csv_wrong_header(tmp_path):
    with pytest.raises(TrafficError) as error:
        read_csv(write_rows(tmp_path, minute_rows(60), header="time,rpm"))
    assert "traffic.csv line 1: header must be 'timestamp,requests', got 'time,rpm'" in str(error.value)


def test_csv_more_than_31_days(tmp_path):
    with pytest.raises(TrafficError) as error:
        read_csv(write_rows(tmp_path, minute_rows(31 * 1440 + 1, start="2026-10-01T00:00:00Z")))
    assert f"traffic.csv line {31 * 1440 + 2}: too many rows: at most 31 days (44640 minutes)" in str(error.value)


def test_csv_missing_and_empty_files(tmp_path):
    with pytest.raises(TrafficError, match="absent.csv: cannot read: No such file or directory"):
        read_csv(tmp_path / "absent.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(TrafficError, match="empty.csv: file is empty; expected the header 'timestamp,requests'"):
        read_csv(empty)
    header_only = write_rows(tmp_path, [])
    with pytest.raises(TrafficError, match="traffic.csv: 0 data rows; at least 60"):
        read_csv(header_only)


def test_a_file_bin_ops_traffic_wrote_before_the_format_moved_is_still_read(tmp_path: Path) -> None:
    """tests/workbench/planner/fixtures/: written by the planner's own writer before issue 49 moved the
    format into ops/operations/traffic_csv.py; read now, and written again byte for byte."""
    fixture = Path(__file__).parent / "fixtures" / "traffic-written-by-ops-traffic.csv"
    profile = read_csv(fixture)
    assert profile.start == datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    assert len(profile.requests_per_minute) == 75 and profile.requests_per_minute[:2] == (100.5, 114.0)
    rewritten = tmp_path / "again.csv"
    write_csv(profile, rewritten)
    assert rewritten.read_bytes() == fixture.read_bytes()
