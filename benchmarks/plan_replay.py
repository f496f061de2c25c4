"""Replays of a week per second: the planner's simulation of one environment's configured scaling,
with totals and verdict (what the margin line and `--tune` run per candidate), before and after.

    .venv/bin/python -m benchmarks.plan_replay [--env prod] [--base REVISION] [--rounds 3]

"before" is the planner at REVISION (default 9629c54, the commit before the fast replay), exported with
`git archive` into a temporary directory; "after" is this working tree. Each runs in its own process,
one after the other in this run, on the same config and traffic (this tree's config/ for both), and
prints the best of `--rounds` rounds; both also print the plan's figures, which must agree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASE = "9629c54"

# Run in a child process whose sys.path starts with the planner under test and then this tree.
CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[4])  # before the working directory python -c puts first
from config.loader import load_catalog, load_environment
from planner.build import build_plan, checks_at
from planner.environment_traffic import traffic_of
cfg = load_environment(sys.argv[1], against_deployed=False)
catalog, traffic = load_catalog(), traffic_of(cfg, None)
replays, rounds = int(sys.argv[2]), int(sys.argv[3])
best = float("inf")
for _ in range(rounds):
    started = time.process_time()
    for _ in range(replays):
        met = checks_at(cfg, catalog, traffic, (), 1.0, cfg.planning.provisioning_minutes)
    best = min(best, time.process_time() - started)
import planner
assert planner.__file__.startswith(sys.argv[4]), planner.__file__
plan = build_plan(cfg, catalog, traffic)
total = plan.scenarios["configured"].total
print(json.dumps({"per_second": replays / best, "met": sorted(met),
                  "cost": round(total.monthly_cost_usd, 2), "rejected": round(total.rejected_requests, 3),
                  "shortfall": total.shortfall_minutes, "delayed": round(total.delayed_requests, 3)}))
"""


def measure(planner_root: Path, env: str, replays: int, rounds: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, env, str(replays), str(rounds), str(planner_root)],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="prod")
    parser.add_argument("--base", default=BASE, help="git revision of the 'before' planner")
    parser.add_argument("--replays", type=int, default=3, help="replays per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", args.base, "planner"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        before = measure(Path(tmp), args.env, args.replays, args.rounds)
    after = measure(REPO, args.env, args.replays * 10, args.rounds)
    print(f"{'':<10}{'replays/s':>10}  figures of the configured scenario")
    for name, result in (("before", before), ("after", after)):
        figures = {k: v for k, v in result.items() if k != "per_second"}
        print(f"{name:<10}{result['per_second']:>10.2f}  {figures}")
    print(f"speed-up  {after['per_second'] / before['per_second']:>9.1f}x")
    if {k: v for k, v in before.items() if k != "per_second"} != {k: v for k, v in after.items() if k != "per_second"}:
        sys.exit("the figures differ: the fast replay changed a result")


if __name__ == "__main__":
    main()
