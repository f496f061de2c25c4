"""Plain-text output: headings, check marks, aligned tables and times in the operator's zone.

Plain text on purpose: it reads the same in a terminal, a CI log and a pasted incident note.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

import typer


def local_zone() -> tzinfo:
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone


class Console:
    def __init__(self, zone: tzinfo | None = None):
        self.zone = zone or local_zone()

    def line(self, text: str = "") -> None:
        typer.echo(text)

    def heading(self, text: str) -> None:
        typer.echo(f"\n{text}")

    def ok(self, text: str) -> None:
        typer.echo(f"  ✓ {text}")

    def fail(self, text: str) -> None:
        typer.echo(f"  ✗ {text}")

    def warn(self, text: str) -> None:
        typer.echo(f"  ! {text}")

    def progress(self, text: str) -> None:
        typer.echo(f"  … {text}")

    def error(self, text: str) -> None:
        typer.echo(f"error: {text}", err=True)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        cells = [list(map(str, headers)), *[[str(c) for c in row] for row in rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        for row in cells:
            typer.echo("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())

    def time(self, moment: datetime) -> str:
        return local_time(moment, self.zone)


def local_time(moment: datetime, zone: tzinfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def one_line(text: str, limit: int = 200) -> str:
    """A message fit for one table cell or error line: whitespace (an HTML error page's newlines and
    indentation) collapsed, cut at `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def percent(value: float) -> str:
    return f"{value:g}%"


def seconds(value: float) -> str:
    """90 → 90s, 600 → 10min, 7200 → 2h, 150 → 2.5min."""
    if value < 120:
        return f"{value:.0f}s"
    minutes = value / 60
    if minutes % 60 == 0:
        return f"{minutes / 60:.0f}h"
    return f"{minutes:.0f}min" if minutes.is_integer() else f"{minutes:.1f}min"
