"""Detects an engine core that hangs: alive, answering /health, but producing no tokens.

vLLM's /health asks the engine client whether the engine core process is dead; a core stuck in a
kernel or a collective is not dead, so /health stays 200 while every stream waits forever. The sign
of a hang is in /metrics: requests unfinished (running + waiting gauges, which stop updating when
the core stops reporting) while the token counters do not move.
"""

from __future__ import annotations

from dataclasses import dataclass

from .prometheus import Exposition

# vLLM 0.33.0 names (vllm/v1/metrics/loggers.py); counters are exposed with `_total`.
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
VLLM_PROMPT_TOKENS = "vllm:prompt_tokens_total"
VLLM_GENERATION_TOKENS = "vllm:generation_tokens_total"


@dataclass
class ProgressWatch:
    stall_seconds: float
    _tokens: float | None = None
    _since: float = 0.0

    def observe(self, exposition_text: str, now: float) -> float | None:
        """Feeds one /metrics scrape; returns the number of unfinished requests when the engine has
        made no progress on them for stall_seconds, else None."""
        engine = Exposition(exposition_text)
        unfinished = (engine.total(VLLM_RUNNING) or 0.0) + (engine.total(VLLM_WAITING) or 0.0)
        tokens = (engine.total(VLLM_PROMPT_TOKENS) or 0.0) + (engine.total(VLLM_GENERATION_TOKENS) or 0.0)
        if unfinished == 0 or tokens != self._tokens:
            self._tokens, self._since = tokens, now
            return None
        return unfinished if now - self._since >= self.stall_seconds else None
