"""What the serving layer costs, measured against the stand-in engine (not a test; rerun at will).

    .venv/bin/python -m workbench.benchmarks.serving_overhead

Setups, each given the same streaming load in the same run:
  (a) engine      clients straight to the stand-in engine (vLLM's own /invocations, no middleware)
  (b) in-process  the stand-in with our middleware loaded as vLLM loads it (this project's design)
  (c) seeds       the seeds' adapter (workbench/benchmarks/seed_adapter.py) in front of the stand-in
  (d) admission   (b) with the admission check on (container/serving/admission.py; 2 s deadline, the
                  engine's 128 slots, so with 128 clients nothing is shed: a 429 would stop the run)
  (e) A/A         a second bare engine, as (a): the run's own noise
  (f) before      (b) with the middleware of another tree (`--before DIR`, DIR/container/serving),
                  e.g. `git archive main | tar -x -C DIR`: the code before a change, in the same run
Loads: 128 concurrent streaming clients, each sending requests back to back over one keep-alive
connection, at 20 ms/token x 64 tokens and at 5 ms/token x 128 tokens. Each round runs every setup
once, (a) and (b) back to back in alternating order, so drift on a shared machine hits them alike;
each figure compares a run with (a)'s run of the same round and is the median over rounds.
Reported relative to (a): throughput ratio, added p50/p99 latency, added p50 time to first byte.

Bodies: `--body short` (one short question) or `--body realistic` (what MangaAssist sends: a system
prompt and 12 turns of chat history, about 3,000 prompt tokens by the guard's estimate, mixed English
and Japanese). With realistic bodies the run also reports CPU time per request of the engine process
((a) bare, (b) with our middleware; summed over its threads from /proc/<pid>/task/*/schedstat, ns
resolution) and, in the same process as this script, the middleware alone around a null engine that
streams the same 64-token answer (time.thread_time over thousands of requests, alternating with the
null engine alone): that difference is the layer's own CPU per request, free of the load generator.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from container.serving.state import ServingState, StateRecord, write_state
from container.serving.tokens import estimate_chat_tokens
from workbench.benchmarks.bodies import chat_messages, request_body
from workbench.standin.harness import Process, free_port, serving_env, start_standin, wait_for_listening

LOADS = (("20 ms/token x 64 tokens", 0.020, 64), ("5 ms/token x 128 tokens", 0.005, 128))
SETUPS = ("a", "b", "c", "d", "e", "f")
# A pause before each run, so the previous one's connections are closed and its processes idle.
SETTLE_SECONDS = 2.0
NAMES = {
    "a": "(a) engine",
    "b": "(b) in-process (ours)",
    "c": "(c) seeds' adapter",
    "d": "(d) in-process, admission on",
    "e": "(e) engine again (A/A)",
    "f": "(f) in-process, before",
}
ADMISSION_DEADLINE_MS = "2000"


@dataclass
class Sample:
    ttfb: float  # request sent -> first body byte
    latency: float  # request sent -> last body byte


@dataclass
class Run:
    throughput: float  # completed requests per second
    samples: list[Sample]
    cpu_per_request: float = 0.0  # seconds of the engine process's CPU per completed request

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


def process_cpu_seconds(pid: int) -> float:
    """CPU time of every thread of a process, from schedstat (nanoseconds, unlike /proc/<pid>/stat's ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as handle:
            total += int(handle.read().split()[0])
    return total / 1e9


async def drive(port: int, clients: int, requests: int, body: bytes, pid: int | None = None) -> Run:
    samples: list[Sample] = []
    cpu_before = process_cpu_seconds(pid) if pid else 0.0
    started = time.perf_counter()
    await asyncio.gather(*(client(port, body, requests, samples) for _ in range(clients)))
    elapsed = time.perf_counter() - started
    cpu = (process_cpu_seconds(pid) - cpu_before) / len(samples) if pid else 0.0
    return Run(len(samples) / elapsed, samples, cpu)


def start_setups(
    workdir: Path, token_interval: float, setups: str, before: Path | None = None
) -> tuple[dict[str, int], dict[str, int], list[Process]]:
    """Ports and engine-process ids per setup, and every process started."""
    ports = {setup: free_port() for setup in ("a", "b", "c-engine", "c", "d", "e", "f")}
    env = serving_env(workdir, ports["b"], STANDIN_TOKEN_INTERVAL=str(token_interval), STANDIN_STARTUP_DELAY="0")
    write_state(env["SERVING_STATE_FILE"], StateRecord(ServingState.READY, "benchmark"))
    started = {
        "a": start_standin(workdir, env, ports["a"], middleware=False, name="engine-a"),
        "b": start_standin(workdir, env, ports["b"], middleware=True, name="engine-b"),
    }
    if "d" in setups:
        admission = {**env, "SERVING_ADMISSION_DEADLINE_MS": ADMISSION_DEADLINE_MS}
        started["d"] = start_standin(workdir, admission, ports["d"], middleware=True, name="engine-d")
    if "e" in setups:
        started["e"] = start_standin(workdir, env, ports["e"], middleware=False, name="engine-e")
    if "f" in setups:
        assert before is not None, "setup f needs --before DIR"
        older = {**env, "PYTHONPATH": os.pathsep.join((str(before / "container"), env["PYTHONPATH"]))}
        started["f"] = start_standin(workdir, older, ports["f"], middleware=True, name="engine-f")
    if "c" in setups:
        started["c-engine"] = start_standin(workdir, env, ports["c-engine"], middleware=False, name="engine-c")
        adapter_env = {**env, "SEED_ADAPTER_UPSTREAM": f"http://127.0.0.1:{ports['c-engine']}"}
        argv = [sys.executable, "-m", "uvicorn", "workbench.benchmarks.seed_adapter:app"]  # run from the repository root
        argv += ["--port", str(ports["c"]), "--no-access-log", "--log-level", "warning"]
        started["c"] = Process(argv, adapter_env, workdir / "seed-adapter.log")
    try:
        for setup, process in started.items():
            wait_for_listening(ports[setup], process)  # any HTTP answer will do, even the adapter's 404
    except BaseException:
        for process in started.values():
            process.stop()
        raise
    pids = {setup: process.popen.pid for setup, process in started.items() if setup in ("a", "b", "d", "e", "f")}
    return ports, pids, list(started.values())


def row(load: str, setup: str, runs: list[Run], baseline: list[Run], name: str | None = None) -> str:
    """Each figure compares a run with the baseline run of the same round: the median over rounds,
    with the lowest and highest in brackets where the spread matters for the targets."""
    pairs = list(zip(runs, baseline, strict=True))

    def added_ms(field: str, q: float) -> list[float]:
        return [1000 * (run.percentile(field, q) - base.percentile(field, q)) for run, base in pairs]

    ratios = [run.throughput / base.throughput for run, base in pairs]
    ttfb = added_ms("ttfb", 0.5)
    cpu = ""
    if runs[0].cpu_per_request:
        added_us = [1e6 * (run.cpu_per_request - base.cpu_per_request) for run, base in pairs]
        cpu = (
            f" {statistics.median(r.cpu_per_request for r in runs) * 1e6:,.0f} "
            f"| {statistics.median(added_us):+.0f} ({min(added_us):+.0f} to {max(added_us):+.0f}) |"
        )
    return (
        f"| {load} | {name or NAMES[setup]} | {statistics.median(ratios):.1%} ({min(ratios):.0%} to {max(ratios):.0%}) "
        f"| {statistics.median(added_ms('latency', 0.5)):+.1f} | {statistics.median(added_ms('latency', 0.99)):+.1f} "
        f"| {statistics.median(ttfb):+.1f} ({min(ttfb):+.0f} to {max(ttfb):+.0f}) |{cpu}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=128)
    parser.add_argument("--requests-per-client", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--body", choices=("short", "realistic"), default="short")
    parser.add_argument("--setups", default="abc", help="which of a-f to run (a is always run)")
    parser.add_argument("--before", type=Path, help="setup f: a tree holding the middleware before a change")
    parser.add_argument("--layer-requests", type=int, default=3000, help="requests per in-process measurement")
    parser.add_argument("--verbose", action="store_true", help="print every run's absolute figures to stderr")
    args = parser.parse_args()
    setups = tuple(setup for setup in SETUPS if setup == "a" or setup in args.setups)
    workdir = Path(f"/tmp/serving-benchmark-{int(time.time())}")
    rows = []
    for load, token_interval, tokens in LOADS:
        body = request_body(args.body, tokens)
        ports, pids, processes = start_setups(workdir / f"{tokens}", token_interval, "".join(setups), args.before)
        measure_cpu = args.body == "realistic"
        try:
            runs: dict[str, list[Run]] = {setup: [] for setup in setups}
            for setup in setups:  # first connections and first requests are not what we measure
                asyncio.run(drive(ports[setup], args.clients, 1, body))
            for round_number in range(args.rounds):
                # Rotate the light setups so none always runs right after another; the heavy setup c last.
                light = [s for s in setups if s != "c"]
                shift = round_number % len(light)
                order = light[shift:] + light[:shift] + [s for s in setups if s == "c"]
                for setup in order:
                    time.sleep(SETTLE_SECONDS)
                    pid = pids.get(setup) if measure_cpu else None
                    run = asyncio.run(drive(ports[setup], args.clients, args.requests_per_client, body, pid))
                    runs[setup].append(run)
                    if args.verbose:
                        print(setup, run.summary(), f"cpu/request={run.cpu_per_request * 1e6:.0f} us", file=sys.stderr)
        finally:
            for process in processes:
                process.stop()
        rows += [row(load, setup, runs[setup], runs["a"]) for setup in setups]
        # The admission check on against off (and against the code before it), in the same rounds.
        rows += [
            row(load, "d", runs["d"], runs[base], NAMES["d"] + f" vs {base}")
            for base in "bf"
            if {base, "d"} <= set(setups)
        ]
    messages = chat_messages(args.body)
    print(
        f"{args.clients} concurrent streaming clients x {args.requests_per_client} requests, median of {args.rounds} "
        f"rounds; {args.body} body: {len(messages)} messages, {len(request_body(args.body, 64)):,} bytes, "
        f"about {estimate_chat_tokens(messages):,} prompt tokens"
    )
    cpu_header = " engine CPU per request (us) | added CPU per request (us), median (range) |"
    print(
        "| load | setup | throughput vs (a) or the setup named, median (range) | added p50 latency (ms) | added p99 latency (ms) "
        "| added p50 TTFB (ms), median (range) |" + (cpu_header if args.body == "realistic" else "")
    )
    print("|---|---|---|---|---|---|" + ("---|---|" if args.body == "realistic" else ""))
    print("\n".join(rows))
    if args.body == "realistic":
        from workbench.benchmarks.layer_cpu import layer_cpu_per_request  # noqa: PLC0415 - only this mode needs it

        added = layer_cpu_per_request(request_body(args.body, 64), 64, args.layer_requests, rounds=args.rounds)
        print(
            f"\nMiddleware alone (in-process, null engine streaming 64 tokens, {args.layer_requests} requests x "
            f"{args.rounds} rounds): {statistics.median(added) * 1e6:.1f} us CPU per request, median "
            f"({min(added) * 1e6:.1f} to {max(added) * 1e6:.1f})"
        )


if __name__ == "__main__":
    main()
