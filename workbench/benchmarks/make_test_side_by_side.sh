#!/usr/bin/env bash
# `workbench/benchmarks/make_test_side_by_side.sh BEFORE AFTER [ROUNDS]`: `make test` of two commits, alternating, ROUNDS
# rounds (default 2), each in a fresh clone of this repository (no __pycache__, as CI has it) that shares this
# checkout's built .venv and node_modules (their install is not what is measured). Prints one line per run:
# wall, user and system seconds (/usr/bin/time) and pytest's closing line; logs stay in the printed directory.
# Run it on a quiet machine: the two commits see the same load only on average (docs/testing.md, issue 36).
set -euo pipefail
before=$1
after=$2
rounds=${3:-2}
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
echo "logs in $work"
for round in $(seq "$rounds"); do
  for commit in "$before" "$after"; do
    clone="$work/clone"
    rm -rf "$clone"
    git clone --quiet "$repo" "$clone"
    git -C "$clone" checkout --quiet "$commit"
    ln -s "$repo/.venv" "$clone/.venv"
    ln -s "$repo/node_modules" "$clone/node_modules"
    # Older than the shared virtualenv's stamp, so make does not reinstall it.
    (cd "$clone" && touch -d '2000-01-01' requirements*.txt package.json package-lock.json)
    log="$work/$commit-$round.log"
    load=$(cut -d' ' -f1 /proc/loadavg)
    status=0
    /usr/bin/time -f "%e %U %S" -o "$work/time" make -C "$clone" test >"$log" 2>&1 || status=$?
    read -r wall user system < <(tail -n 1 "$work/time")
    closing=$(grep -E '^[0-9]+ (passed|failed)' "$log" | tail -n 1 || true)
    echo "round $round $commit: exit $status, load $load, wall ${wall} s, CPU ${user} + ${system} s | $closing"
  done
done
