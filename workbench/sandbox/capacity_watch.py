"""What the capacity watch's once-a-minute EventBridge schedule does in an account, for the sandbox: the real
handler (constructs/capacity_watch_handler/handler.py) runs against the sandbox's moto every minute, with the
environment its Lambda gets (constructs/capacity_watch.py), so the alarms, `bin/ops verify` (which fails while a
rollback alarm's metric has no data: the engine-silent alarm reads InstancesInService) and `bin/ops status`
read the MangaAssist/Capacity metrics a real account has."""

from __future__ import annotations

import os
import threading
from typing import Any

from config.schema import EnvironmentConfig
from constructs.capacity_watch import NAMESPACE, peak_windows_json
from constructs.capacity_watch_handler import handler

EVERY_SECONDS = 60  # the schedule's rate (constructs/capacity_watch.py)


def watch_environment(cfg: EnvironmentConfig) -> dict[str, str]:
    """The Lambda's environment, as the construct sets it."""
    return {
        "ENDPOINT_NAME": cfg.endpoint_name,
        "VARIANT_NAMES": ",".join(v.name for v in cfg.variants),
        "METRIC_NAMESPACE": NAMESPACE,
        "PEAK_WINDOWS": peak_windows_json(cfg.release_calendar),
    }


class CapacityWatchAgent(threading.Thread):
    """Runs the watch at once, then every minute, until stopped. A failed run publishes nothing, as in AWS (the
    alarms read a silent watch as capacity short)."""

    def __init__(self, cfg: EnvironmentConfig, clients: tuple[Any, Any, Any]) -> None:
        super().__init__(daemon=True)
        self.clients = clients
        self.stopped = threading.Event()
        os.environ.update(watch_environment(cfg))  # the sandbox server's own process: the handler reads these

    def run_once(self) -> dict[str, Any] | None:
        try:
            return handler.handler({"source": "aws.events"}, None, clients=self.clients)
        except Exception:  # noqa: BLE001 (a Lambda error: the invocation fails, nothing is published)
            return None

    def run(self) -> None:
        while not self.stopped.is_set():
            self.run_once()
            self.stopped.wait(EVERY_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
