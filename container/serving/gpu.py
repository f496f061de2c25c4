"""GPU visibility through nvidia-smi, which the NVIDIA container runtime mounts into every GPU container.

Used once before the engine starts and then periodically (never per request)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

QUERY = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]


@dataclass(frozen=True)
class GpuProbe:
    ok: bool
    detail: str


async def probe_gpus(timeout_seconds: float = 5.0) -> GpuProbe:
    try:
        process = await asyncio.create_subprocess_exec(
            *QUERY, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
    except FileNotFoundError:
        return GpuProbe(False, "nvidia-smi not found: no NVIDIA driver in this container")
    try:
        async with asyncio.timeout(timeout_seconds):  # not wait_for: it can lose a cancellation (loopback.py)
            stdout, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return GpuProbe(False, f"nvidia-smi did not answer within {timeout_seconds:g} s")
    gpus = [line.strip() for line in stdout.decode(errors="replace").splitlines() if line.strip()]
    if process.returncode != 0 or not gpus:
        message = stderr.decode(errors="replace").strip() or stdout.decode(errors="replace").strip()
        return GpuProbe(False, f"nvidia-smi exited {process.returncode}: {message or 'no GPU listed'}")
    return GpuProbe(True, "; ".join(gpus))
