"""The image's entrypoint: runs the start-up phases, owns readiness and signals, supervises vLLM.

Phases, each logged with its duration: validate_environment -> start_engine -> wait_for_engine ->
warmup -> ready (then serve until SIGTERM, an engine failure or a GPU check failing for too long) -> drain ->
stop_engine.

It tells the middleware inside vLLM what to answer through the state file (see state.py) and reads
the middleware's in-flight count and counters back from the loopback-only /_serving/stats route.
Exit status: 0 after SIGTERM, otherwise one of the EXIT_* codes below, so SageMaker replaces the
instance (or fails the deployment, which rolls back).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from .engine_command import engine_command, engine_environment
from .gpu import probe_gpus
from .jsonlog import JsonLogger
from .loopback import LoopbackClient, LoopbackError
from .metrics import MetricsEmitter
from .middleware import STATS_PATH
from .preflight import environment_problems
from .progress import ProgressWatch
from .settings import ENGINE_STOP_GRACE_SECONDS, Settings, SettingsError
from .state import ServingState, StateRecord, write_state
from .warmup import WarmupFailed, run_warmup, warmup_plan

EXIT_OK = 0
EXIT_INVALID_ENVIRONMENT = 2
EXIT_ENGINE_START_FAILED = 3
EXIT_WARMUP_FAILED = 4
EXIT_ENGINE_DIED = 5
EXIT_ENGINE_HUNG = 6
EXIT_GPU_FAILED = 7

# SageMaker wants /ping to reflect a dead engine within 2 s: poll well inside that.
HEALTH_POLL_SECONDS = 0.5
HEALTH_TIMEOUT_SECONDS = 1.5
# A 503 from /health means the engine is dead (at once); timeouts only after several in a row,
# since a saturated API server can be slow without being broken.
HEALTH_TIMEOUTS_BEFORE_FAILED = 3
# vLLM's watchdog stops its API server within 5 s of engine death (launchers/launcher.py); until
# then it still answers, and /ping says 503 instead of refusing connections.
ENGINE_EXIT_GRACE_SECONDS = 5.0
DRAIN_POLL_SECONDS = 0.1
# How often the hang watch reads /metrics (at most; a third of the stall time if that is shorter).
PROGRESS_POLL_SECONDS = 5.0
STICKY_STATES = (ServingState.DRAINING, ServingState.FAILED)


class Supervisor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.log = JsonLogger("supervisor", settings.log_level)
        self.client = LoopbackClient(settings.port)
        self.state = ServingState.STARTING
        self.engine: asyncio.subprocess.Process | None = None
        self.engine_exited: asyncio.Task[int] | None = None

    async def run(self) -> int:
        stop_requested = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop_requested.set)
        self.set_state(ServingState.STARTING, "validating the environment")
        lifecycle = asyncio.create_task(self._lifecycle())
        stop = asyncio.create_task(stop_requested.wait())
        try:
            await asyncio.wait({lifecycle, stop}, return_when=asyncio.FIRST_COMPLETED)
            if lifecycle.done():
                return lifecycle.result()
            return await self._shutdown(lifecycle)
        finally:
            stop.cancel()
            lifecycle.cancel()
            await self._stop_engine()

    def set_state(self, state: ServingState, reason: str) -> None:
        if self.state in STICKY_STATES and state is not ServingState.FAILED:
            return
        write_state(self.settings.state_file, StateRecord(state, reason))
        self.log.info("state", state=state.value, previous=self.state.value, reason=reason)
        self.state = state

    @contextmanager
    def _phase(self, name: str, **fields: Any) -> Iterator[dict[str, Any]]:
        started = time.monotonic()
        self.log.info("phase_started", phase=name, **fields)
        outcome: dict[str, Any] = {"status": "ok"}
        try:
            yield outcome
        except BaseException as exc:
            outcome.update(status="error", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.log.info(
                "phase_finished", phase=name, duration_ms=round((time.monotonic() - started) * 1000), **outcome
            )

    async def _lifecycle(self) -> int:
        settings = self.settings
        with self._phase("validate_environment") as outcome:
            problems = await environment_problems(settings)
            if problems:
                outcome.update(status="failed", problems=problems)
        if problems:
            self.set_state(ServingState.FAILED, "; ".join(problems))
            return EXIT_INVALID_ENVIRONMENT

        with self._phase("start_engine") as outcome:
            command = engine_command(settings)
            outcome["command"] = command
            try:
                # Its own session: the engine's worker processes can be stopped as one group.
                self.engine = await asyncio.create_subprocess_exec(
                    *command, env=engine_environment(settings, os.environ), start_new_session=True
                )
            except OSError as exc:
                outcome.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        if self.engine is None:
            self.set_state(ServingState.FAILED, f"could not start the engine: {outcome['error']}")
            return EXIT_ENGINE_START_FAILED
        self.engine_exited = asyncio.create_task(self.engine.wait())
        self.set_state(ServingState.STARTING, "the engine is loading the model")

        with self._phase("wait_for_engine") as outcome:
            healthy = await self._wait_for_engine()
            if not healthy:
                outcome.update(status="failed", exit_code=self.engine.returncode)
        if not healthy:
            self.set_state(ServingState.FAILED, f"the engine exited with code {self.engine.returncode} while starting")
            return EXIT_ENGINE_START_FAILED

        self.set_state(ServingState.WARMING_UP, "warming up the engine and adapters")
        plan = warmup_plan(settings.adapters, settings.warmup_requests)
        with self._phase("warmup", requests=len(plan), timeout_seconds=settings.warmup_timeout_seconds) as outcome:
            try:
                async with asyncio.timeout(settings.warmup_timeout_seconds):  # not wait_for: loopback.py says why
                    report = await run_warmup(self.client, plan, settings.warmup_timeout_seconds)
                outcome["by_label"] = report.by_label
                failure = None
            except TimeoutError:
                failure = f"warmup did not finish within {settings.warmup_timeout_seconds:g} s"
            except (WarmupFailed, LoopbackError) as exc:
                failure = f"warmup failed: {type(exc).__name__}: {exc}"
            if failure:
                outcome.update(status="failed", error=failure)
        if failure:
            self.set_state(ServingState.FAILED, failure)
            return EXIT_WARMUP_FAILED

        self.set_state(ServingState.READY, "warm and serving")
        return await self._serve()

    async def _wait_for_engine(self) -> bool:
        while not self.engine_exited.done():
            try:
                if (await self.client.get("/health", HEALTH_TIMEOUT_SECONDS)).status == 200:
                    return True
            except LoopbackError:
                pass  # still loading: the port is bound but not listening yet
            await asyncio.wait({self.engine_exited}, timeout=HEALTH_POLL_SECONDS)
        return False

    async def _serve(self) -> int:
        emitter = MetricsEmitter(self.settings, self.client, STATS_PATH, self.log)
        background = [asyncio.create_task(emitter.run())]
        watches = [asyncio.create_task(w) for w in (self._watch_engine(), self._watch_progress(), self._watch_gpu())]
        try:
            done, _ = await asyncio.wait(watches, return_when=asyncio.FIRST_COMPLETED)
            return done.pop().result()
        finally:
            for task in background + watches:
                task.cancel()

    async def _watch_engine(self) -> int:
        timeouts = 0
        while True:
            await asyncio.wait({self.engine_exited}, timeout=HEALTH_POLL_SECONDS)
            if self.engine_exited.done():
                self.set_state(ServingState.FAILED, f"the engine exited with code {self.engine.returncode}")
                return EXIT_ENGINE_DIED
            try:
                response = await self.client.get("/health", HEALTH_TIMEOUT_SECONDS)
            except LoopbackError as exc:
                timeouts += 1
                if timeouts < HEALTH_TIMEOUTS_BEFORE_FAILED:
                    continue
                reason = f"the engine stopped answering its health check ({type(exc).__name__})"
            else:
                if response.status == 200:
                    timeouts = 0
                    continue
                reason = f"the engine reports itself dead (/health answered {response.status})"
            self.set_state(ServingState.FAILED, reason)
            await asyncio.wait({self.engine_exited}, timeout=ENGINE_EXIT_GRACE_SECONDS)
            return EXIT_ENGINE_DIED

    async def _watch_progress(self) -> int:
        """An engine that is alive but produces no token while requests wait: 503, then exit."""
        stall_seconds = self.settings.engine_stall_seconds
        watch = ProgressWatch(stall_seconds)
        while True:
            await asyncio.sleep(min(PROGRESS_POLL_SECONDS, stall_seconds / 3))
            try:
                response = await self.client.get("/metrics", HEALTH_TIMEOUT_SECONDS)
            except LoopbackError:
                continue  # an API server that does not answer is the health watch's to judge
            if response.status != 200:
                continue
            unfinished = watch.observe(response.text, time.monotonic())
            if unfinished is not None:
                self.set_state(
                    ServingState.FAILED,
                    f"the engine produced no token for {stall_seconds:g} s with {unfinished:g} requests unfinished",
                )
                return EXIT_ENGINE_HUNG

    async def _watch_gpu(self) -> int:
        """A failing GPU check: 503 at once (it may recover). Still failing `unhealthy_exit_seconds` after
        the first failed check: `failed`, drain the requests in flight, exit, so SageMaker replaces the
        instance (what SageMaker does with an instance whose /ping says 503 for ever is not documented)."""
        settings = self.settings
        failing_since: float | None = None
        while True:
            wait = settings.gpu_check_interval_seconds
            if failing_since is not None:  # check again when the bound is reached, not up to one interval later
                wait = min(wait, max(0.0, failing_since + settings.unhealthy_exit_seconds - time.monotonic()))
            await asyncio.sleep(wait)
            probe = await probe_gpus()
            if probe.ok:
                failing_since = None
                if self.state is ServingState.UNHEALTHY:
                    self.set_state(ServingState.READY, "GPU check passes again")
            elif failing_since is None:
                failing_since = time.monotonic()
                if self.state is ServingState.READY:
                    self.set_state(ServingState.UNHEALTHY, f"GPU check failed: {probe.detail}")
            elif time.monotonic() - failing_since >= settings.unhealthy_exit_seconds:
                failing_for = time.monotonic() - failing_since
                self.set_state(ServingState.FAILED, f"GPU check failing for {failing_for:.0f} s: {probe.detail}")
                with self._phase("drain", budget_seconds=settings.http_drain_seconds) as outcome:
                    outcome["in_flight_left"] = await self._drain()
                return EXIT_GPU_FAILED

    async def _shutdown(self, lifecycle: asyncio.Task[int]) -> int:
        was_serving = self.state in (ServingState.READY, ServingState.UNHEALTHY)
        self.set_state(ServingState.DRAINING, "SIGTERM received: finishing in-flight requests")
        lifecycle.cancel()
        await asyncio.gather(lifecycle, return_exceptions=True)
        if was_serving:
            with self._phase("drain", budget_seconds=self.settings.http_drain_seconds) as outcome:
                outcome["in_flight_left"] = await self._drain()
        return EXIT_OK

    async def _drain(self) -> int | None:
        """Waits until no request is in flight; returns how many were left when the budget ran out."""
        deadline = time.monotonic() + self.settings.http_drain_seconds
        failures = 0
        in_flight = None
        while not self.engine_exited.done():
            try:
                in_flight = (await self.client.get(STATS_PATH, HEALTH_TIMEOUT_SECONDS)).json()["in_flight"]
                failures = 0
            except (LoopbackError, ValueError, KeyError) as exc:
                # Like the engine watch: a busy API server can miss a poll; only several in a row mean
                # it is gone (then nothing is left to drain).
                failures += 1
                self.log.warning("drain_poll_failed", error=f"{type(exc).__name__}: {exc}", in_a_row=failures)
                if failures >= HEALTH_TIMEOUTS_BEFORE_FAILED:
                    return None
            if in_flight == 0 or time.monotonic() >= deadline:
                return in_flight
            await asyncio.sleep(DRAIN_POLL_SECONDS)
        return None

    async def _stop_engine(self) -> None:
        if self.engine is None:
            return
        if not self.engine_exited.done():
            with self._phase("stop_engine"):
                self.engine.send_signal(signal.SIGTERM)
                await asyncio.wait({self.engine_exited}, timeout=ENGINE_STOP_GRACE_SECONDS)
        # Whatever is left in the engine's process group (vLLM's engine-core workers) goes too.
        with suppress(ProcessLookupError):
            os.killpg(self.engine.pid, signal.SIGKILL)
        await self.engine_exited


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    log = JsonLogger("supervisor")
    # SageMaker starts the container as `docker run IMAGE serve`: that argument carries no meaning here.
    unexpected = [argument for argument in arguments if argument != "serve"]
    if unexpected:
        log.error("unexpected_arguments", arguments=unexpected, hint="the image takes its settings from SERVING_*")
        return EXIT_INVALID_ENVIRONMENT
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        log.error("invalid_settings", problems=exc.problems)
        return EXIT_INVALID_ENVIRONMENT
    return asyncio.run(Supervisor(settings).run())


if __name__ == "__main__":
    sys.exit(main())
