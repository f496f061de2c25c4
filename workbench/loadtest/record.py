"""`--write-config`: the measurement goes into the environment's YAML under
`planning.capacity.<instance type>`: the rate answered within the objective (the record's answer,
capacity.load; never a rate offered), with where, when and with which image it was measured, through
`config.editor` (line edits that keep every other line byte for byte, validated as synth validates
before they replace the file, as `ops promote` edits configs).

A measurement of the sandbox's stand-in engine (its record's `target.stand_in`, set by
`bin/loadtest`) is no instance type's capacity and is never written. A figure lower than the one it
replaces leaves the scheduled floors carrying less than they were sized for: `floor_notes` says by how
much (the config stays valid; `make plan` re-sizes them).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from config.editor import edit_environment_file
from config.schema import EnvironmentConfig


class NotAMeasurement(ValueError):
    """A record that must not become a `planning.capacity` figure (no answer, or a stand-in's)."""


def record_measurement(config_file: Path, instance_type: str, record: dict[str, Any], report_path: Path) -> str:
    """Writes the figure; returns the line it wrote. Raises NotAMeasurement for a record without an
    answer or of a stand-in, config.editor.UnsafeEdit for a file the line edits cannot change, and
    config.editor.EditRefused (a ConfigError naming what else must change) when the result would refuse
    synth; the file is then left as it was."""
    answer = record["requests_per_minute_per_instance"]
    if answer is None:
        raise NotAMeasurement("no rate held the objective: nothing to record")
    target = record["target"]
    if target.get("stand_in"):
        raise NotAMeasurement(f"measured against {target['stand_in']}: not recorded in the config")
    where = f"url {target['url']}" if target.get("kind") == "url" else f"{target['environment']}/{target['variant']}"
    measured = CommentedMap(
        where=where,
        measured_at=record["measured_at"],
        image_tag=target.get("image_tag"),
        slo_ttft_p95_ms=record["slo"]["ttft_p95_ms"],
        report=str(report_path),
    )
    ratio = reading_ratio(record)
    if ratio is not None:  # what ConcurrentRequestsPerModel read over the client's in flight (signal_reading)
        measured["concurrency_reading_ratio"] = round(ratio, 2)
    entry = CommentedMap(
        requests_per_minute=round(answer, 1),
        concurrent_sequences=concurrent_sequences(record),
        measured=measured,
    )

    def add(document: Any) -> None:
        planning = document.setdefault("planning", CommentedMap())
        planning.setdefault("capacity", CommentedMap())[instance_type] = entry

    edit_environment_file(config_file, add).write()
    objective = f"TTFT p95 <= {record['slo']['ttft_p95_ms']:g} ms"
    return (
        f"planning.capacity.{instance_type}: {answer:,.0f}/min answered within the objective ({objective}), "
        f"measured on {where} {record['measured_at']}"
    )


def reading_ratio(record: dict[str, Any]) -> float | None:
    """The platform's ConcurrentRequestsPerModel Average over the client's mean in flight, averaged over
    the held steps that have both (loadtest.signal_reading); None when no step was read."""
    ratios = [
        s["concurrency_reading_ratio"]
        for s in record.get("steps", [])
        if s.get("held") and s.get("concurrency_reading_ratio") is not None
    ]
    return sum(ratios) / len(ratios) if ratios else None


def concurrent_sequences(record: dict[str, Any]) -> int:
    """The figure written as `concurrent_sequences`: requests in flight at the answer, rounded up."""
    return max(1, math.ceil(record.get("concurrent_requests_per_instance_at_slo") or 1))


def floor_notes(cfg: EnvironmentConfig, instance_type: str, requests_per_minute: float) -> list[str]:
    """Each scheduled window's floor (`min_capacity`) on `instance_type` that carried more at the
    config's figure than it will at `requests_per_minute`, with the floor that carries the same rate."""
    current = cfg.planning.capacity.get(instance_type)
    if current is None or requests_per_minute >= current.requests_per_minute:
        return []
    notes = []
    for variant in cfg.variants:
        scaling = cfg.autoscaling.get(variant.name)
        if variant.instance_type != instance_type or scaling is None:
            continue
        for i, window in enumerate(scaling.schedules):
            carried = window.min_capacity * current.requests_per_minute
            needed = math.ceil(carried / requests_per_minute)
            if needed <= window.min_capacity:
                continue
            ceiling = window.max_capacity
            above = f", above the window's max_capacity {ceiling}" if ceiling is not None and needed > ceiling else ""
            notes.append(
                f"autoscaling.{variant.name}.schedules[{i}].min_capacity ({window.name}): {window.min_capacity} "
                f"carried up to {window.min_capacity} x {current.requests_per_minute:,g} = {carried:,.0f}/min; at "
                f"{requests_per_minute:,g}/min the same rate takes {needed}{above}"
            )
    return notes
