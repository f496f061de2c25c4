"""Waiting with botocore's Waiter: its built-in waiters where they exist, its waiter model elsewhere.

Every poll passes through a reporting wrapper, so the operator sees each state the waiter sees.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.waiter import NormalizedOperationMethod, SingleWaiterConfig, Waiter, WaiterModel

from ops.operations.output import Console, seconds


@dataclass(frozen=True)
class Timing:
    """How often to poll and how to pass time; tests hand in zero delays and a fake sleep."""

    poll_seconds: float = 15
    max_polls: int = 240  # an hour at the default delay
    sleep: Callable[[float], None] = time.sleep  # holds between traffic steps
    clock: Callable[[], float] = time.monotonic


def builtin_waiter(client: Any, name: str) -> tuple[str, SingleWaiterConfig]:
    waiter = client.get_waiter(name)
    return waiter.name, waiter.config


def custom_waiter(name: str, operation: str, acceptors: list[dict[str, Any]]) -> tuple[str, SingleWaiterConfig]:
    """A waiter in botocore's own model format (the same JSON the built-in waiters are written in)."""
    model = WaiterModel(
        {
            "version": 2,
            "waiters": {name: {"operation": operation, "delay": 15, "maxAttempts": 240, "acceptors": acceptors}},
        }
    )
    return name, model.get_waiter(name)


def wait(
    waiter: tuple[str, SingleWaiterConfig],
    operation: Callable[..., dict[str, Any]],
    describe: Callable[[dict[str, Any]], str],
    console: Console,
    timing: Timing,
    **params: Any,
) -> None:
    """Run the waiter, printing `describe(response)` with the elapsed time on every poll."""
    name, config = waiter
    started = timing.clock()
    normalized = NormalizedOperationMethod(operation)  # turns ClientErrors into responses, as botocore does

    def polled(**kwargs: Any) -> dict[str, Any]:
        response = normalized(**kwargs)
        if "Error" in response:
            state = f"{response['Error'].get('Code')}: {response['Error'].get('Message')}"
        else:
            state = describe(response)
        console.progress(f"[{seconds(timing.clock() - started)}] {state}")
        return response

    Waiter(name, config, polled).wait(
        WaiterConfig={"Delay": timing.poll_seconds, "MaxAttempts": timing.max_polls}, **params
    )
