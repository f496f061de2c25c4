"""The serving state, written by the supervisor and read by the middleware inside vLLM's process.

A small JSON file replaced atomically: it works however many API processes read it, survives either
side restarting, and costs the middleware one stat() per request to notice a change at once.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from enum import StrEnum


class ServingState(StrEnum):
    STARTING = "starting"  # engine loading; no middleware answers yet (see docs/reference/container.md)
    WARMING_UP = "warming_up"
    READY = "ready"
    UNHEALTHY = "unhealthy"  # GPU check failing; may recover (within SERVING_UNHEALTHY_EXIT_SECONDS)
    DRAINING = "draining"  # SIGTERM received
    FAILED = "failed"  # engine dead or GPU failing too long; the container is about to exit non-zero


@dataclass(frozen=True)
class StateRecord:
    state: ServingState
    reason: str


NOT_REPORTED = StateRecord(ServingState.STARTING, "the supervisor has not reported a state yet")


def write_state(path: str, record: StateRecord) -> None:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".state-")
    with os.fdopen(fd, "w") as handle:
        json.dump({"state": record.state.value, "reason": record.reason}, handle)
    os.replace(tmp, path)


class StateReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self._version: tuple[int, int, int] | None = None
        self._record = NOT_REPORTED

    def current(self) -> StateRecord:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._version, self._record = None, NOT_REPORTED
            return self._record
        version = (st.st_ino, st.st_mtime_ns, st.st_size)
        if version != self._version:
            try:
                with open(self.path) as handle:
                    data = json.load(handle)
                record = StateRecord(ServingState(data["state"]), str(data["reason"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                # Not cached: the next request reads the file again.
                return StateRecord(ServingState.UNHEALTHY, f"state file {self.path} unreadable: {exc}")
            self._record, self._version = record, version
        return self._record
