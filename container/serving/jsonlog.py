"""One JSON object per stdout line: SageMaker ships stdout to CloudWatch Logs, where log lines are
searchable and EMF lines become metrics."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def write_line(document: dict[str, Any]) -> None:
    # One write call per line, so lines from the supervisor and the engine never interleave mid-line.
    os.write(sys.stdout.fileno(), (json.dumps(document, separators=(",", ":"), default=str) + "\n").encode())


class JsonLogger:
    def __init__(self, component: str, level: str = "info") -> None:
        self.component = component
        self.threshold = _LEVELS[level]

    def log(self, level: str, event: str, **fields: Any) -> None:
        if _LEVELS[level] >= self.threshold:
            write_line(
                {"ts": round(time.time(), 3), "level": level, "component": self.component, "event": event, **fields}
            )

    def debug(self, event: str, **fields: Any) -> None:
        self.log("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self.log("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log("error", event, **fields)
