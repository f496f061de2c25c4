"""`python -m ops.pipeline.deploy_window ENV [--during-peak]`: `make deploy`'s first step, refusing a deploy
whose blue/green update would overlap a peak window (config/deploy_window.py).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from config.deploy_window import check, in_minutes, refusal
from ops.pipeline.environment_arg import REFUSED, USAGE, environment_or_say_why, hook_or_say_why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.pipeline.deploy_window", description="Refuse a deploy that would overlap a peak window."
    )
    parser.add_argument("env")
    parser.add_argument("--during-peak", action="store_true", help="deploy even if a peak window overlaps")
    parser.add_argument("--now", type=datetime.fromisoformat, help="ISO time with offset (tests); default: now")
    args = parser.parse_args(argv)
    now = args.now or datetime.now(UTC)
    if now.tzinfo is None:
        print(f"error: --now needs a UTC offset, got {args.now.isoformat()}", file=sys.stderr)
        return USAGE
    cfg = environment_or_say_why(args.env)
    hook = cfg and hook_or_say_why()
    if cfg is None or hook is None:
        return USAGE
    note = None if args.now else hook.peak_windows_skipped(cfg.name)  # --now: judging a given time was asked for
    if note is not None:
        print(f"deploy window: {note}; `{hook.deploy_command(cfg.name)}` is the deploy there")
        return 0
    verdict = check(cfg, now)
    if verdict.clash is None:
        print(f"deploy window: no peak window of {cfg.name} in the next {in_minutes(verdict.duration)}")
        return 0
    message = refusal(cfg, verdict, f"make deploy ENV={cfg.name} FORCE_PEAK=1")
    if args.during_peak:
        print(f"warning (FORCE_PEAK): {message.splitlines()[0].replace('refusing to deploy', 'deploying')}")
        return 0
    print(f"error: {message}", file=sys.stderr)
    return REFUSED


if __name__ == "__main__":
    sys.exit(main())
