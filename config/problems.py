"""How a configuration problem is written: one path notation, values quoted with a bounded length.

A problem is (field path, message). Paths use one notation everywhere, field validation and
cross-field checks alike: mapping keys joined by dots, list items by their index in brackets, as
they appear in the YAML file (`autoscaling.primary.schedules[4].start`, `variants[1].initial_weight`).
Messages quote user values through `quote`, so a hostile value (a 5 MB string, an expanded YAML
alias) cannot make a message long; `ConfigError` bounds whatever slips through.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

Problem = tuple[str, str]  # (field path, message naming the bad value and what is allowed)

MAX_QUOTED_CHARS = 200  # any user value quoted in a message
MAX_KEY_CHARS = 60  # one user-chosen key inside a field path
MAX_MESSAGE_CHARS = 600
MAX_PROBLEMS_SHOWN = 50


def refuse(path: str, message: str) -> list[Problem]:
    """A check's single problem, as the list every check returns."""
    return [(path, message)]


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def quote(value: Any) -> str:
    """A user value as it appears in a message: repr-quoted, at most MAX_QUOTED_CHARS long.

    Containers are cut before they are formatted, so an enormous list never becomes an enormous string.
    """
    if isinstance(value, list | tuple | dict | set) and len(value) > MAX_QUOTED_CHARS:
        return f"<{type(value).__name__} of {len(value)} items>"
    try:
        text = repr(value)
    except RecursionError:  # a structure nested deeper than repr can walk
        return f"<deeply nested {type(value).__name__}>"
    return shorten(text, MAX_QUOTED_CHARS)


def field_path(*parts: str | int) -> str:
    """`field_path("autoscaling", "primary", "schedules", 4)` -> 'autoscaling.primary.schedules[4]'."""
    text = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part}]"
        else:
            key = shorten(str(part), MAX_KEY_CHARS)
            text += f".{key}" if text else key
    return text or "(file)"


def variant_path(variants: list, name: str, *rest: str | int) -> str:
    """Path of the variant called `name` (by its index in `variants`), then `rest`."""
    index = next((i for i, v in enumerate(variants) if v.name == name), None)
    if index is None:
        return field_path("variants", *rest)
    return field_path("variants", index, *rest)


def did_you_mean(value: Any, choices: Iterable[str]) -> str:
    """' (did you mean 'ml.g5.xlarge'?)' for a close known name, else '': a typo names its fix."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.85)
    if not close:  # letter case is the commonest slip and scores low on the ratio ("asia/tokyo")
        close = [choice for choice in choices if choice.lower() == value.lower()][:1]
    return f" (did you mean {quote(close[0])}?)" if close else ""
