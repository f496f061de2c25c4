"""What the serving layer costs, measured against the stand-in engine (not a test; rerun at will).

    .venv/bin/python benchmarks/serving_overhead.py

Setups, each given the same streaming load in the same run:
  (a) engine      clients straight to the stand-in engine (vLLM's own /invocations, no middleware)
  (b) in-process  the stand-in with our middleware loaded as vLLM loads it (this project's design)
  (c) seeds       the seeds' adapter (benchmarks/seed_adapter.py) in front of the stand-in
Loads: 128 concurrent streaming clients, each sending requests back to back over one keep-alive
connection, at 20 ms/token x 64 tokens and at 5 ms/token x 128 tokens. Each round runs every setup
once, (a) and (b) back to back in alternating order, so drift on a shared machine hits them alike;
each figure compares a run with (a)'s run of the same round and is the median over rounds.
Reported relative to (a): throughput ratio, added p50/p99 latency, added p50 time to first byte.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "container")]

from serving_harness import Process, free_port, serving_env, start_standin, wait_for_listening  # noqa: E402

from container.serving.state import ServingState, StateRecord, write_state  # noqa: E402

LOADS = (("20 ms/token x 64 tokens", 0.020, 64), ("5 ms/token x 128 tokens", 0.005, 128))
SETUPS = ("a", "b", "c")
# A pause before each run, so the previous one's connections are closed and its processes idle.
SETTLE_SECONDS = 2.0
NAMES = {"a": "(a) engine", "b": "(b) in-process (ours)", "c": "(c) seeds' adapter"}


@dataclass
class Sample:
    ttfb: float  # request sent -> first body byte
    latency: float  # request sent -> last body byte


@dataclass
class Run:
    throughput: float  # completed requests per second
    samples: list[Sample]

    def percentile(self, field: str, q: float) -> float:
        values = sorted(getattr(sample, field) for sample in self.samples)
        return values[min(len(values) - 1, int(q * len(values)))]

    def summary(self) -> str:
        figures = [
            f"{f} p{round(q * 100)}={self.percentile(f, q) * 1000:.0f} ms"
            for f in ("ttfb", "latency")
            for q in (0.5, 0.99)
        ]
        return f"{self.throughput:.1f} req/s, " + ", ".join(figures)


async def client(port: int, body: bytes, requests: int, samples: list[Sample]) -> None:
    """One keep-alive HTTP/1.1 connection, requests back to back; reads chunked or sized bodies."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    try:
        for _ in range(requests):
            sent = time.perf_counter()
            writer.write(head + body)
            await writer.drain()
            headers = (await reader.readuntil(b"\r\n\r\n")).lower()
            if not headers.startswith(b"http/1.1 200"):
                raise RuntimeError(headers.decode(errors="replace"))
            first = None
            if b"transfer-encoding: chunked" in headers:
                while True:
                    size = int((await reader.readline()).split(b";")[0], 16)
                    await reader.readexactly(size + 2)
                    first = first or time.perf_counter()
                    if size == 0:
                        break
            else:
                length = int(headers.split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                first = time.perf_counter()
            samples.append(Sample(first - sent, time.perf_counter() - sent))
    finally:
        writer.close()


async def drive(port: int, clients: int, requests: int, tokens: int) -> Run:
    body = json.dumps(
        {"messages": [{"role": "user", "content": "Recommend a manga."}], "max_tokens": tokens, "stream": True}
    ).encode()
    samples: list[Sample] = []
    started = time.perf_counter()
    await asyncio.gather(*(client(port, body, requests, samples) for _ in range(clients)))
    return Run(len(samples) / (time.perf_counter() - started), samples)


def start_setups(workdir: Path, token_interval: float) -> tuple[dict[str, int], list[Process]]:
    ports = {setup: free_port() for setup in ("a", "b", "c-engine", "c")}
    env = serving_env(workdir, ports["b"], STANDIN_TOKEN_INTERVAL=str(token_interval), STANDIN_STARTUP_DELAY="0")
    write_state(env["SERVING_STATE_FILE"], StateRecord(ServingState.READY, "benchmark"))
    processes = [
        start_standin(workdir, env, ports["a"], middleware=False, name="engine-a"),
        start_standin(workdir, env, ports["b"], middleware=True, name="engine-b"),
        start_standin(workdir, env, ports["c-engine"], middleware=False, name="engine-c"),
    ]
    adapter_env = {**env, "SEED_ADAPTER_UPSTREAM": f"http://127.0.0.1:{ports['c-engine']}"}
    argv = [sys.executable, "-m", "uvicorn", "seed_adapter:app", "--app-dir", str(REPO / "benchmarks")]
    argv += ["--port", str(ports["c"]), "--no-access-log", "--log-level", "warning"]
    processes.append(Process(argv, adapter_env, workdir / "seed-adapter.log"))
    try:
        for setup, process in zip(("a", "b", "c-engine", "c"), processes, strict=True):
            wait_for_listening(ports[setup], process)  # any HTTP answer will do, even the adapter's 404
    except BaseException:
        for process in processes:
            process.stop()
        raise
    return ports, processes


def row(load: str, setup: str, runs: list[Run], baseline: list[Run]) -> str:
    """Each figure compares a run with the baseline run of the same round: the median over rounds,
    with the lowest and highest in brackets where the spread matters for the targets."""
    pairs = list(zip(runs, baseline, strict=True))

    def added_ms(field: str, q: float) -> list[float]:
        return [1000 * (run.percentile(field, q) - base.percentile(field, q)) for run, base in pairs]

    ratios = [run.throughput / base.throughput for run, base in pairs]
    ttfb = added_ms("ttfb", 0.5)
    return (
        f"| {load} | {NAMES[setup]} | {statistics.median(ratios):.1%} ({min(ratios):.0%} to {max(ratios):.0%}) "
        f"| {statistics.median(added_ms('latency', 0.5)):+.1f} | {statistics.median(added_ms('latency', 0.99)):+.1f} "
        f"| {statistics.median(ttfb):+.1f} ({min(ttfb):+.0f} to {max(ttfb):+.0f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=128)
    parser.add_argument("--requests-per-client", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print every run's absolute figures to stderr")
    args = parser.parse_args()
    workdir = Path(f"/tmp/serving-benchmark-{int(time.time())}")
    rows = []
    for load, token_interval, tokens in LOADS:
        ports, processes = start_setups(workdir / f"{tokens}", token_interval)
        try:
            runs: dict[str, list[Run]] = {setup: [] for setup in SETUPS}
            for setup in SETUPS:  # first connections and first requests are not what we measure
                asyncio.run(drive(ports[setup], args.clients, 1, tokens))
            for round_number in range(args.rounds):
                # Alternate a and b so neither always runs right after the heavy setup c.
                for setup in ("a", "b", "c") if round_number % 2 == 0 else ("b", "a", "c"):
                    time.sleep(SETTLE_SECONDS)
                    run = asyncio.run(drive(ports[setup], args.clients, args.requests_per_client, tokens))
                    runs[setup].append(run)
                    if args.verbose:
                        print(setup, run.summary(), file=sys.stderr)
        finally:
            for process in processes:
                process.stop()
        rows += [row(load, setup, runs[setup], runs["a"]) for setup in SETUPS]
    print(
        f"{args.clients} concurrent streaming clients x {args.requests_per_client} requests, median of {args.rounds} rounds"
    )
    print(
        "| load | setup | throughput vs (a), median (range) | added p50 latency (ms) | added p99 latency (ms) "
        "| added p50 TTFB (ms), median (range) |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
