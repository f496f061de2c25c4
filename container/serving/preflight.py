"""Phase 1: is this container able to serve at all? Every problem is reported, each in one clear line."""

from __future__ import annotations

import os

from .gpu import probe_gpus
from .settings import Settings


async def environment_problems(settings: Settings) -> list[str]:
    problems = []
    gpu = await probe_gpus()
    if not gpu.ok:
        problems.append(f"no usable GPU: {gpu.detail}")
    if not os.path.isfile(os.path.join(settings.model_dir, "config.json")):
        problems.append(f"model directory {settings.model_dir} has no config.json (weights missing or wrong path)")
    for adapter in settings.adapters:
        directory = settings.adapter_dir(adapter)
        if not os.path.isfile(os.path.join(directory, "adapter_config.json")):
            problems.append(f"adapter {adapter!r}: {directory} has no adapter_config.json")
    return problems
