"""A conversation session drawn before the clock starts: what capacity.conversations draws and
capacity.under_way resumes, in a module of its own so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionPlan:
    """One session, drawn before the clock starts: its adapter, each turn's user text and answer length,
    and the think time after each answer but the last."""

    adapter: str
    turns: tuple[tuple[str, int], ...]
    thinks: tuple[float, ...]
