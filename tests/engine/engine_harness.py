"""Starting the supervisor on the real engine, and reading what it serves."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from workbench.standin.harness import (
    ADAPTERS,
    CONTAINER,
    FAKES,
    PingRecorder,
    Process,
    free_port,
    http_status,
    serving_env,
    start_supervisor,
    wait_until,
)

# Waits that only a broken build reaches: vLLM's CPU start takes ~30 s on a quiet 2-core machine and
# several times that on a busy one.
START_PATIENCE_SECONDS = 600.0
REQUEST_TIMEOUT_SECONDS = 120.0
ADAPTER_HEADER = "X-Amzn-SageMaker-Adapter-Identifier"

# What differs on a CPU, set through the same variables the stacks set (config/container_env.py):
CPU_SETTINGS = {
    "SERVING_QUANTIZATION": "none",  # the tiny model is not quantised (and vLLM's CPU build has no AWQ)
    "SERVING_BLOCK_SIZE": "32",  # vLLM's CPU attention needs a multiple of 32
    # On CPU vLLM reads this as the share of system RAM it may take, KV cache included:
    # ~1.5 GiB of this machine's memory, of which ~0.8 GiB becomes KV cache for the tiny model.
    "SERVING_GPU_MEMORY_UTILIZATION": "0.08",
    "SERVING_MAX_MODEL_LEN": "2048",
    "SERVING_MAX_NUM_SEQS": "16",
    "SERVING_MAX_NUM_BATCHED_TOKENS": "2048",
    "SERVING_MAX_LORAS": "4",
    "SERVING_MAX_LORA_RANK": "16",
    "SERVING_GENERATION_RESERVE_TOKENS": "600",
    "SERVING_WARMUP_REQUESTS": "6",
    "SERVING_WARMUP_TIMEOUT_SECONDS": "300",
    "SERVING_DRAIN_SECONDS": "25",
    "SERVING_METRICS_INTERVAL_SECONDS": "1",
}


def engine_env(workdir: Path, port: int, venv: Path, model_dir: Path, **overrides: str) -> dict[str, str]:
    """serving_env's production-like SERVING_* values with the CPU settings, the engine's `vllm` first
    on PATH and only `nvidia-smi` faked (the supervisor's GPU check; there is no GPU here)."""
    (workdir / "model").symlink_to(model_dir, target_is_directory=True)
    gpu_bin = workdir / "gpu-bin"
    gpu_bin.mkdir()
    (gpu_bin / "nvidia-smi").symlink_to(FAKES / "nvidia-smi.sh")
    return serving_env(
        workdir,
        port,
        PATH=os.pathsep.join((str(gpu_bin), str(venv / "bin"), os.environ["PATH"])),
        PYTHONPATH=str(CONTAINER),  # the image's `serving` package only
        HF_HUB_OFFLINE="1",
        **{**CPU_SETTINGS, **overrides},
    )


@dataclass
class Serving:
    """One container: the supervisor, its engine, a /ping recorder from the first second, and the
    answer to one customer request sent while the container was not ready yet (the traffic gate)."""

    workdir: Path
    port: int
    process: Process
    recorder: PingRecorder
    client: httpx.Client = field(init=False)
    gate: httpx.Response | None = None

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=REQUEST_TIMEOUT_SECONDS)
        threading.Thread(target=self._probe_gate, daemon=True).start()

    def _probe_gate(self) -> None:
        """As soon as /ping answers 503 (vLLM listens; starting or warming up), send one invocation."""
        deadline = time.monotonic() + START_PATIENCE_SECONDS
        while time.monotonic() < deadline and self.process.popen.poll() is None:
            if http_status(f"http://127.0.0.1:{self.port}/ping") == 503:
                with httpx.Client(base_url=self.client.base_url, timeout=REQUEST_TIMEOUT_SECONDS) as client:
                    self.gate = client.post("/invocations", json=chat())
                return
            time.sleep(0.02)

    def wait_ready(self) -> None:
        def ready() -> bool:
            if self.process.popen.poll() is not None:
                raise AssertionError(f"supervisor exited early:\n{self.process.output()[-6000:]}")
            return http_status(f"http://127.0.0.1:{self.port}/ping") == 200

        wait_until(ready, "/ping to say 200", timeout=START_PATIENCE_SECONDS)

    def request_line(self, request_id: str) -> dict[str, Any]:
        """The request's log line (written about a second after the request ends)."""
        return wait_until(
            lambda: next((e for e in self.process.events("request") if e.get("request_id") == request_id), None),
            f"the log line of {request_id}",
        )

    def close(self) -> None:
        self.recorder.running = False
        self.client.close()
        self.process.stop()


def launch(tmp_path_factory: Any, name: str, venv: Path, model_dir: Path, **overrides: str) -> Serving:
    workdir = tmp_path_factory.mktemp(name)
    port = free_port()
    env = engine_env(workdir, port, venv, model_dir, **overrides)
    recorder = PingRecorder(port)
    process = start_supervisor(workdir, env)
    recorder.start()
    return Serving(workdir, port, process, recorder)


def chat(content: str = "Recommend a manga.", max_tokens: int = 8, **extra: Any) -> dict[str, Any]:
    """Greedy, and never stopped early by the random model's end-of-turn token."""
    return {
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        **extra,
    }


def sse_events(text: str) -> list[Any]:
    """A streamed response's `data:` events, JSON-decoded, `[DONE]` kept as the string."""
    events = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def stream_in_thread(serving: Serving, request_id: str, max_tokens: int, results: dict[str, Any]) -> threading.Thread:
    """A streamed /invocations in a thread. results[request_id] gets the status, when the first and the
    last line arrived (monotonic), the events, and whether the connection was cut."""

    def run() -> None:
        body = chat(model=ADAPTERS[len(results) % len(ADAPTERS)], max_tokens=max_tokens, stream=True)
        result: dict[str, Any] = {"status": None, "first": None, "done": None, "cut": False}
        results[request_id] = result
        lines = []
        try:
            with httpx.stream(
                "POST", f"{serving.client.base_url}/invocations", json=body, headers={"X-Request-Id": request_id},
                timeout=REQUEST_TIMEOUT_SECONDS,
            ) as response:  # fmt: skip
                result["status"] = response.status_code
                for line in response.iter_lines():
                    result["first"] = result["first"] or time.monotonic()
                    lines.append(line)
        except httpx.TransportError:
            result["cut"] = True
        result["done"] = time.monotonic()
        result["events"] = sse_events("\n".join(lines))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def descendants(pid: int) -> list[int]:
    """Every process under `pid`, read from /proc (only this test's own processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
