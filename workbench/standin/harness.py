"""Runs the serving image's Python code as real processes: the supervisor (with the stand-in engine
behind a fake `vllm` on PATH) or the stand-in alone with our middleware loaded the way vLLM loads it.
The container tests, the sandbox and the benchmarks start their processes through it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

FAKES = Path(__file__).resolve().parent / "fakes"  # the `vllm` and `nvidia-smi` test doubles
REPO = Path(__file__).resolve().parents[2]  # holds this package and the image's code (container/)
CONTAINER = REPO / "container"
ADAPTERS = ("manga_domain_v3", "general_support_v2", "jp_style_v1")
MIDDLEWARE = "serving.middleware.ServingMiddleware"
# Upper bound for waits that only fail a broken build; a passing run never gets near it.
PATIENCE_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fake_bin(directory: Path) -> Path:
    """`vllm` and `nvidia-smi` test doubles, linked under the names the supervisor runs."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, script in (("vllm", "vllm.sh"), ("nvidia-smi", "nvidia-smi.sh")):
        link = directory / name
        if not link.exists():
            link.symlink_to(FAKES / script)
    return directory


def model_tree(root: Path, adapters: tuple[str, ...] = ADAPTERS) -> tuple[Path, Path]:
    base, lora = root / "base", root / "lora"
    base.mkdir(parents=True)
    (base / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    for adapter in adapters:
        (lora / adapter).mkdir(parents=True)
        (lora / adapter / "adapter_config.json").write_text('{"r": 16}')
    return base, lora


def serving_env(workdir: Path, port: int, **overrides: str) -> dict[str, str]:
    """The SERVING_* environment CDK would set (prod-like values), plus what the test doubles need."""
    base, lora = workdir / "model" / "base", workdir / "model" / "lora"
    if not base.exists():
        model_tree(workdir / "model")
    env = {
        **os.environ,
        "PATH": f"{fake_bin(workdir / 'bin')}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join((str(CONTAINER), str(REPO))),  # the image's `serving`, and `standin`
        "PYTHONUNBUFFERED": "1",
        "STANDIN_PYTHON": sys.executable,
        "SERVING_MODEL_DIR": str(base),
        "SERVING_LORA_DIR": str(lora),
        "SERVING_LORA_ADAPTERS": ",".join(ADAPTERS),
        "SERVING_QUANTIZATION": "awq",
        "SERVING_GPU_MEMORY_UTILIZATION": "0.92",
        "SERVING_MAX_MODEL_LEN": "4096",
        "SERVING_MAX_NUM_SEQS": "128",
        "SERVING_MAX_NUM_BATCHED_TOKENS": "8192",
        "SERVING_BLOCK_SIZE": "16",
        "SERVING_MAX_LORAS": "4",
        "SERVING_MAX_LORA_RANK": "16",
        "SERVING_GENERATION_RESERVE_TOKENS": "600",
        "SERVING_WARMUP_REQUESTS": "6",
        "SERVING_WARMUP_TIMEOUT_SECONDS": "20",
        "SERVING_DRAIN_SECONDS": "15",
        "SERVING_METRICS_INTERVAL_SECONDS": "1",
        "SERVING_ENDPOINT_NAME": "mangaassist-llm-test",
        "SERVING_VARIANT_NAME": "primary",
        "SERVING_MODEL_VERSION": "v0.1.0-test",
        "SERVING_LOG_LEVEL": "info",
        "SERVING_HOST": "127.0.0.1",
        "SERVING_PORT": str(port),
        "SERVING_STATE_FILE": str(workdir / "state" / "state.json"),
        "SERVING_GPU_CHECK_INTERVAL_SECONDS": "30",
        "FAKE_GPU_FAIL_FILE": str(workdir / "gpu-failed"),
        "STANDIN_TOKEN_INTERVAL": "0.005",
        "STANDIN_STARTUP_DELAY": "0.5",
    }
    env.update(overrides)
    return env


def wait_until(condition: Callable[[], Any], what: str, timeout: float = PATIENCE_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.02)
    raise AssertionError(f"gave up waiting for {what} after {timeout:g} s")


class Process:
    """A child process whose stdout+stderr go to a file (never a pipe that could fill up and block it)."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(argv, env=env, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def json_lines(self) -> Iterator[dict[str, Any]]:
        for line in self.output().splitlines():
            if line.startswith("{"):
                try:
                    yield json.loads(line)
                except ValueError:
                    continue

    def events(self, event: str) -> list[dict[str, Any]]:
        return [line for line in self.json_lines() if line.get("event") == event]

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.popen.send_signal(sig)

    def wait(self, timeout: float = PATIENCE_SECONDS) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(
                f"process did not exit within {timeout:g} s; output:\n{self.output()[-4000:]}"
            ) from exc

    def stop(self) -> None:
        """SIGTERM first: a supervisor then stops its engine, which runs in a session of its own."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(PATIENCE_SECONDS)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()


def start_supervisor(workdir: Path, env: dict[str, str]) -> Process:
    return Process([sys.executable, "-m", "serving.supervisor", "serve"], env, workdir / "supervisor.log")


def start_standin(
    workdir: Path,
    env: dict[str, str],
    port: int,
    *,
    middleware: bool,
    name: str = "standin",
    extra: tuple[str, ...] = (),
) -> Process:
    argv = [sys.executable, "-m", "workbench.standin.engine", "serve", str(workdir / "model" / "base"), "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--served-model-name", "base", "--enable-lora", "--lora-modules"]
    argv += [f"{adapter}={workdir / 'model' / 'lora' / adapter}" for adapter in ADAPTERS]
    argv += ["--disable-uvicorn-access-log", "--uvicorn-log-level", "warning", "--shutdown-timeout", "2"]
    if middleware:
        argv += ["--middleware", MIDDLEWARE]
    return Process([*argv, *extra], env, workdir / f"{name}.log")


# One client for every status poll: httpx.get builds a client, and with it an SSL context that loads
# certifi's CA bundle (~25 ms of CPU), at each of the hundreds of polls a test run makes. No keep-alive:
# each poll still opens its own connection, so "nothing accepts the connection" means what it says.
# httpx's Client "can be shared between threads" (its docstring).
_POLL_CLIENT = httpx.Client(timeout=2.0, limits=httpx.Limits(max_keepalive_connections=0))


def http_status(url: str) -> int | None:
    """Status of a GET, or None when nothing accepts the connection."""
    try:
        return _POLL_CLIENT.get(url).status_code
    except httpx.TransportError:
        return None


def wait_for_listening(port: int, process: Process) -> None:
    def listening() -> bool:
        if process.popen.poll() is not None:
            raise AssertionError(f"process exited early:\n{process.output()[-4000:]}")
        return http_status(f"http://127.0.0.1:{port}/health") is not None

    wait_until(listening, f"port {port} to answer")


def chat_body(content: str = "Recommend a manga.", **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "max_tokens": 8, **extra}


TIMED_OUT = "timed out"  # a poll /ping did not answer in time (a busy 2-core machine), kept apart


class PingRecorder(threading.Thread):
    """Polls /ping from the moment the container starts and keeps every change it sees."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/ping"
        self.seen: list[tuple[int | None, dict | None]] = []
        self.running = True
        self.paused = False  # set while a test times streams: 100 polls a second disturb the real engine's

    def run(self) -> None:
        # One client for every poll: a new one per poll loads an SSL context each time, and 100 of those a
        # second starve the test's other threads of the GIL (their streams then seem to arrive all at once).
        with httpx.Client(timeout=2.0) as client:
            while self.running:
                if self.paused:
                    time.sleep(0.01)
                    continue
                observation = self._poll(client)
                if not self.seen or self.seen[-1] != observation:
                    self.seen.append(observation)
                time.sleep(0.01)

    def _poll(self, client: httpx.Client) -> tuple[int | str | None, dict | None]:
        # A transport error is tried once more before it counts as "nothing listens": the poll may have gone out
        # on a kept-alive connection the server was closing as idle (vLLM's uvicorn: VLLM_HTTP_TIMEOUT_KEEP_ALIVE,
        # 5 s, vllm/envs.py; it passes while the polls are paused), and the retry opens a new one (CI saw a None
        # between two 200s).
        try:
            return self._ask(client)
        except httpx.TransportError:
            try:
                return self._ask(client)
            except httpx.TransportError:  # refused or reset again: nothing listens
                return None, None

    def _ask(self, client: httpx.Client) -> tuple[int | str, dict | None]:
        try:
            response = client.get(self.url)
        except httpx.TimeoutException:  # no answer within 2 s: slow, which is not "not ready"
            return TIMED_OUT, None
        return response.status_code, response.json()

    def statuses(self) -> list[int | None]:
        """Every change of /ping's status: an HTTP status, None (refused), never a timed-out poll."""
        return [status for status, _ in self.seen if status != TIMED_OUT]

    def timeouts(self) -> int:
        return sum(1 for status, _ in self.seen if status == TIMED_OUT)
