"""One JSON object per stdout line: SageMaker ships stdout to CloudWatch Logs, where log lines are
searchable and EMF lines become metrics."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
# The supervisor and the engine share stdout: a pipe write of at most PIPE_BUF bytes is atomic, so
# lines are written in groups no larger than that and never interleave with another process's.
_ATOMIC_WRITE_BYTES = 4096


# One encoder for every line: json.dumps with options builds a new JSONEncoder per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)


def json_line(document: dict[str, Any]) -> bytes:
    return (_ENCODER.encode(document) + "\n").encode()


def write_lines(lines: Iterable[bytes]) -> None:
    group: list[bytes] = []
    size = 0
    for line in lines:
        if group and size + len(line) > _ATOMIC_WRITE_BYTES:
            _write(b"".join(group))
            group, size = [], 0
        group.append(line)
        size += len(line)
    if group:
        _write(b"".join(group))


def write_line(document: dict[str, Any]) -> None:
    _write(json_line(document))


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(sys.stdout.fileno(), view) :]


class JsonLogger:
    def __init__(self, component: str, level: str = "info") -> None:
        self.component = component
        self.threshold = _LEVELS[level]

    def record(self, level: str, event: str, **fields: Any) -> dict[str, Any] | None:
        """The log document, or None when the level is below the threshold."""
        if _LEVELS[level] < self.threshold:
            return None
        return {"ts": round(time.time(), 3), "level": level, "component": self.component, "event": event, **fields}

    def log(self, level: str, event: str, **fields: Any) -> None:
        if (document := self.record(level, event, **fields)) is not None:
            write_line(document)

    def info(self, event: str, **fields: Any) -> None:
        self.log("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log("error", event, **fields)
