"""`--write-config`: the measurement goes into the environment's YAML under
`planning.capacity.<instance type>`, with where, when and with which image it was measured, through
`config.editor` (the round trip that keeps every comment and the layout, validated before it replaces
the file, as `ops promote` edits configs)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from config.editor import edit_environment_file


def record_measurement(config_file: Path, instance_type: str, record: dict[str, Any], report_path: Path) -> str:
    """Writes the figure; returns the line it wrote. The record must hold an answer. Raises
    config.editor.UnsafeEdit for a file a round trip would reformat, and the loader's ConfigError when
    the result would be invalid; the file is then left as it was."""
    answer = record["requests_per_minute_per_instance"]
    if answer is None:
        raise ValueError("no rate held the objective: nothing to record")
    target = record["target"]
    where = f"url {target['url']}" if target.get("kind") == "url" else f"{target['environment']}/{target['variant']}"
    measured = CommentedMap(
        where=where,
        measured_at=record["measured_at"],
        image_tag=target.get("image_tag"),
        slo_ttft_p95_ms=record["slo"]["ttft_p95_ms"],
        report=str(report_path),
    )
    concurrency = record.get("concurrent_requests_per_instance_at_slo") or 1
    entry = CommentedMap(
        requests_per_minute=round(answer, 1),
        concurrent_sequences=max(1, math.ceil(concurrency)),
        measured=measured,
    )

    def add(document: Any) -> None:
        planning = document.setdefault("planning", CommentedMap())
        planning.setdefault("capacity", CommentedMap())[instance_type] = entry

    edit_environment_file(config_file, add).write()
    return f"planning.capacity.{instance_type}: {answer:,.0f}/min measured on {where} {record['measured_at']}"
