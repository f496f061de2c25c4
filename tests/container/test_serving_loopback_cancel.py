"""A cancellation that lands just as a loopback call ends is kept: the supervisor's SIGTERM cancels its start-up,
which may be polling the loading engine's /health at that instant. CPython 3.11's asyncio.wait_for returned the
inner call's result instead (Lib/asyncio/tasks.py `wait_for`; fixed in 3.12, gh-86296): the start-up went on
polling, and test_sigterm_while_the_model_loads_stops_cleanly waited for an exit that never came (1 run in 6 on a
busy machine). Here the cancel lands at that instant every time: the exchange itself cancels its caller as it
returns its answer."""

from __future__ import annotations

import asyncio

import pytest

from container.serving.loopback import LoopbackClient, Response


def test_a_cancel_as_the_answer_arrives_cancels_the_call() -> None:
    async def run() -> None:
        client = LoopbackClient(port=9)
        caller: asyncio.Task | None = None

        async def exchange(*_: object) -> Response:
            caller.cancel()  # the SIGTERM's cancel, in the same step as the answer
            return Response(200, {}, b"ok")

        client._exchange = exchange  # the answer's arrival, at an exact point (no socket involved)
        caller = asyncio.create_task(client.get("/health", 5))
        with pytest.raises(asyncio.CancelledError):
            await caller

    asyncio.run(run())
