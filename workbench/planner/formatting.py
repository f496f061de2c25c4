"""How the planner's reports print numbers and times, so the summary, verdict and comparison agree."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

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


def format_percent(value: float) -> str:
    """Two significant digits, never in scientific notation: 0.033, 0.1, 14."""
    if value == 0:
        return "0"
    if value >= 10:
        return f"{value:.0f}"
    return f"{value:.2g}" if value >= 0.001 else "<0.001"
