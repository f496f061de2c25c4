"""Just enough of the Prometheus text exposition format to read vLLM's /metrics."""

from __future__ import annotations

import math
import re
from collections import defaultdict

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Exposition:
    """Samples by metric name; values of the same name are summed over label sets (engines, models)."""

    def __init__(self, text: str) -> None:
        self.samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            match = _SAMPLE.match(line)
            if match is None:
                continue
            labels = dict(_LABEL.findall(match["labels"] or ""))
            self.samples[match["name"]].append((labels, float(match["value"])))

    def total(self, name: str) -> float | None:
        values = [value for _, value in self.samples.get(name, ())]
        return sum(values) if values else None

    def buckets(self, histogram: str) -> dict[float, float]:
        """Cumulative count per upper bound (`le`), summed over label sets."""
        cumulative: dict[float, float] = defaultdict(float)
        for labels, value in self.samples.get(f"{histogram}_bucket", ()):
            cumulative[math.inf if labels["le"] == "+Inf" else float(labels["le"])] += value
        return dict(cumulative)


def bucket_delta(current: dict[float, float], previous: dict[float, float]) -> dict[float, float]:
    """Observations in the interval; a counter reset (engine restart) counts from zero."""
    delta = {bound: count - previous.get(bound, 0.0) for bound, count in current.items()}
    return current if any(count < 0 for count in delta.values()) else delta


def histogram_quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """Prometheus's histogram_quantile: linear interpolation inside the bucket holding the rank."""
    bounds = sorted(cumulative)
    if not bounds or cumulative[bounds[-1]] <= 0:
        return None
    rank = q * cumulative[bounds[-1]]
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower_bound  # the highest finite bound is the best answer Prometheus gives
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound
