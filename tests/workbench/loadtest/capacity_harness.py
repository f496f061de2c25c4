"""Test support for the capacity tool: the serving layer's middleware in front of the vLLM stand-in
(standin/), whose capacity is known by construction (its tokens paced by the clock: a request holds its slot
max_tokens x the token interval however busy the machine), and a workload of fixed-length answers."""

from __future__ import annotations

from pathlib import Path

from container.serving.state import ServingState, StateRecord, write_state
from workbench.standin.harness import free_port, serving_env, start_standin, wait_for_listening

FIXED_WORKLOAD = """\
adapters: {manga_domain_v3: 1, general_support_v2: 1, jp_style_v1: 1}
system_prompt_tokens: 40
user_turn_tokens: {min: 10, max: 20}
answer_tokens: {median: 25, sigma: 0, min: 25, max: 25}
"""


def start_engine(workdir: Path, slots: int, token_interval: float, **overrides: str):
    port = free_port()
    settings = {
        "STANDIN_TOKEN_INTERVAL": str(token_interval),
        "STANDIN_STARTUP_DELAY": "0",
        "STANDIN_TOKEN_PACING": "clock",
    }
    env = serving_env(workdir, port, **{**settings, **overrides})
    process = start_standin(workdir, env, port, middleware=True, extra=("--max-num-seqs", str(slots)))
    wait_for_listening(port, process)
    write_state(env["SERVING_STATE_FILE"], StateRecord(ServingState.READY, "set by the test"))
    return f"http://127.0.0.1:{port}", process
