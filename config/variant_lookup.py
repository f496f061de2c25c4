"""Variants by name and their share of traffic, for any list of named, weighted variants.

SageMaker weights are relative to each other, so a share is always taken against the sum; the config's
variants and the live endpoint's both go through here, so they agree on what "a share" is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


NamedT = TypeVar("NamedT", bound=Named)


def by_name(items: Iterable[NamedT], name: str) -> NamedT | None:
    """The first item called `name`, or None: the caller says what a missing one means."""
    return next((item for item in items if item.name == name), None)


def share_percent(weight: float, weights: Iterable[float]) -> float:
    """`weight` as a percentage of the sum of `weights` (all variants' weights, itself included)."""
    total = sum(weights)
    return round(100 * weight / total, 2) if total else 0.0
