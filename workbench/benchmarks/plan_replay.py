"""Replays of a week per second: the planner's replay of one environment's configured scaling, with its
totals and verdict (what the margin line and `--tune` run per candidate), at several revisions side by side.

    .venv/bin/python -m workbench.benchmarks.plan_replay [--env prod] [--revisions 9629c54 fe38d8d HEAD] [--rounds 3]

Each revision is exported whole with `git archive` into a temporary directory and measured in its own
process there (its own planner, config and traffic), one after the other in this run. Times are CPU
time of that process (time.process_time): this machine is shared, wall time measures the neighbours.
9629c54 is the planner before the fast replay and fe38d8d the fast replay alone, with the same config
and the same semantics: their figures must agree, and the run fails if they do not. Later revisions
change the budget and the config (issue 37), so their figures are printed, not compared.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
SAME_SEMANTICS = ("9629c54", "fe38d8d")  # before / after the fast replay, nothing else changed

CHILD = """
import json, sys, time
sys.path.insert(0, ".")
from config.loader import load_catalog, load_environment
from workbench.planner.build import build_plan, checks_at
from workbench.planner.environment_traffic import traffic_of
cfg = load_environment(sys.argv[1], against_deployed=False)
catalog, traffic = load_catalog(), traffic_of(cfg, None)
replays, rounds = int(sys.argv[2]), int(sys.argv[3])
best = float("inf")
for _ in range(rounds):
    started = time.process_time()
    for _ in range(replays):
        met = checks_at(cfg, catalog, traffic, (), 1.0, cfg.planning.provisioning_minutes)
    best = min(best, time.process_time() - started)
total = build_plan(cfg, catalog, traffic).scenarios["configured"].total
print(json.dumps({"per_second": replays / best, "met": sorted(met), "cost": round(total.monthly_cost_usd, 2),
                  "rejected": round(total.rejected_requests, 3), "shortfall": total.shortfall_minutes,
                  "delayed": round(total.delayed_requests, 3)}))
"""


def measure(revision: str, env: str, replays: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(["git", "archive", revision], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, env, str(replays), str(rounds)],
            cwd=tree, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="prod")
    parser.add_argument("--revisions", nargs="+", default=[*SAME_SEMANTICS, "HEAD"])
    parser.add_argument("--replays", type=int, default=5, help="replays per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = {rev: measure(rev, args.env, args.replays, args.rounds) for rev in args.revisions}
    first = results[args.revisions[0]]["per_second"]
    print(f"{'revision':<10}{'replays/s':>10}{'speed-up':>10}  figures of the configured scenario")
    for rev, result in results.items():
        figures = {k: v for k, v in result.items() if k != "per_second"}
        print(f"{rev:<10}{result['per_second']:>10.2f}{result['per_second'] / first:>9.1f}x  {figures}")
    same = [results[rev] for rev in SAME_SEMANTICS if rev in results]
    if len(same) == 2 and {**same[0], "per_second": 0} != {**same[1], "per_second": 0}:
        sys.exit("the figures of the same config differ between the replays: the fast replay changed a result")


if __name__ == "__main__":
    main()
