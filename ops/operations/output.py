"""Plain-text output (headings, check marks, tables, local times): the same in a terminal, a CI log and an incident note."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON document on stdout instead of text, for scripts.")]


def local_zone() -> tzinfo:
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone


class Console:
    """`width`: longer lines wrapped at spaces, continuations four columns deeper (`status`: 119)."""

    def __init__(self, zone: tzinfo | None = None, width: int | None = None):
        self.zone = zone or local_zone()
        self.width = width

    def line(self, text: str = "") -> None:
        typer.echo(self.fit(text))

    def heading(self, text: str) -> None:
        typer.echo(f"\n{self.fit(text)}")

    def ok(self, text: str) -> None:
        typer.echo(self.fit(f"  ✓ {text}"))

    def fail(self, text: str) -> None:
        typer.echo(self.fit(f"  ✗ {text}"))

    def warn(self, text: str) -> None:
        typer.echo(self.fit(f"  ! {text}"))

    def progress(self, text: str) -> None:
        typer.echo(self.fit(f"  … {text}"))

    def fit(self, text: str) -> str:
        if self.width is None:
            return text
        return "\n".join(_wrapped(line, self.width) for line in text.split("\n"))

    def error(self, text: str) -> None:
        typer.echo(f"error: {text}", err=True)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        cells = [list(map(str, headers)), *[[str(c) for c in row] for row in rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        for row in cells:
            typer.echo(self.fit("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()))

    def time(self, moment: datetime) -> str:
        return local_time(moment, self.zone)


def _wrapped(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")))
    return textwrap.fill(
        line.lstrip(" "), width=width, initial_indent=indent, subsequent_indent=indent + "    ", break_on_hyphens=False
    )


def local_time(moment: datetime, zone: tzinfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def one_line(text: str, limit: int = 200) -> str:
    """Whitespace (an HTML error page's) collapsed, cut at `limit` characters with an ellipsis."""
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


DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|min|m|s)")
UNIT_SECONDS = {"h": 3600, "min": 60, "m": 60, "s": 1}


def parse_duration(value: str | float) -> float:
    """`90`, `90s`, `10m`, `30min`, `2.5min`, `1h30m` → seconds; everything `seconds()` prints parses."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = DURATION_PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        raise typer.BadParameter(f"'{value}' is not a duration like 90s, 10m, 30min or 1h30m")
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)
