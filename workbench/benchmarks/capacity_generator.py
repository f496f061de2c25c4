"""Is `bin/loadtest`'s load generator the bottleneck? It offers RATE requests/min of TOKENS-token
streams for SECONDS to the vLLM stand-in behind the serving middleware (enough batch slots that
nothing queues), in one process on this machine, and prints the generator's own send lag (actual
send minus schedule) next to the answers' timings. Not a test: the figure depends on the machine.

    .venv/bin/python -m workbench.benchmarks.capacity_generator [--rate 1200] [--tokens 100] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import threading
from pathlib import Path

from container.serving.state import ServingState, StateRecord, write_state
from workbench.loadtest.load import StepSettings, run_step
from workbench.loadtest.targets import UrlTarget
from workbench.loadtest.workload import DEFAULT_WORKLOAD, Workload
from workbench.standin.harness import free_port, serving_env, start_standin, wait_for_listening


def bodies(tokens: int):
    for body in Workload.load(DEFAULT_WORKLOAD).bodies():
        yield {**body, "max_tokens": tokens}


async def measure(url: str, rate: float, tokens: int, seconds: float) -> None:
    target = UrlTarget(url)
    await target.open()
    try:
        step, records = await run_step(
            target, bodies(tokens), StepSettings(rate, seconds), threading.Event(), random.Random(1), print
        )
    finally:
        await target.close()
    print(
        f"offered {rate:,.0f}/min of {tokens}-token streams for {seconds:g} s: {step.requests} requests, "
        f"{step.errors} errors, answered {step.achieved_rpm:,.0f}/min, send lag p99 {step.send_lag_p99_ms:.1f} ms, "
        f"TTFT p50 {step.ttft_p50_ms:.0f} ms / p95 {step.ttft_p95_ms:.0f} ms, {step.mean_in_flight:.1f} in flight"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1200)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--token-interval", type=float, default=0.01)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        port = free_port()
        env = serving_env(
            Path(workdir), port, STANDIN_TOKEN_INTERVAL=str(args.token_interval), STANDIN_STARTUP_DELAY="0"
        )
        engine = start_standin(Path(workdir), env, port, middleware=True, extra=("--max-num-seqs", "512"))
        try:
            wait_for_listening(port, engine)
            write_state(env["SERVING_STATE_FILE"], StateRecord(ServingState.READY, "benchmark"))
            asyncio.run(measure(f"http://127.0.0.1:{port}", args.rate, args.tokens, args.seconds))
        finally:
            engine.stop()


if __name__ == "__main__":
    main()
