"""The peak-window guard for `python -m ops deploy` and `promote --deploy` (rules: config/deploy_window.py)."""

from __future__ import annotations

from datetime import datetime

from config import EnvironmentConfig
from config.deploy_window import check, refusal
from ops.operations.errors import ExitCode, OpsError
from ops.operations.output import Console
from ops.operations.runtime_hook import runtime_hook


def check_peak_windows(cfg: EnvironmentConfig, now: datetime, during_peak: bool, console: Console) -> None:
    """Refused (exit 4) before anything is touched when the update would overlap a peak window; a note
    instead where the runtime hook skips them."""
    if (note := runtime_hook().peak_windows_skipped(cfg.name)) is not None:
        console.line(note)
        return
    verdict = check(cfg, now)
    if verdict.clash is None:
        return
    message = refusal(cfg, verdict, f"bin/ops deploy {cfg.name} --during-peak")
    if not during_peak:
        raise OpsError(message, ExitCode.REFUSED)
    console.warn(f"--during-peak: {message.splitlines()[0].replace('refusing to deploy', 'deploying')}")
