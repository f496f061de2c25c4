"""How many seeded multi-mistake configs report every mistake (`make test` asserts it; this counts).

Each seed applies 2-8 of the independent mistakes in config_mutations.py (beside this module) to prod.yaml
and loads it. A config counts as fully reported when every mistake's field appears in a problem path
(matched by the field's own name, so older path notations count too); a Python exception other
than ConfigError counts as a crash. Run from the repository root, or point --code at another
checkout to compare (its `config` package is imported, the mistakes come from this one):

    .venv/bin/python -m workbench.benchmarks.config_problem_recall --seeds 200
    .venv/bin/python -m workbench.benchmarks.config_problem_recall --seeds 200 --code /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from ruamel.yaml import YAML

import config  # this checkout's, or --code's in the interpreter main() starts for another checkout
from workbench.benchmarks.config_mutations import MUTATIONS

REPO = Path(__file__).resolve().parents[2]
IN_CHILD = "CONFIG_RECALL_CHILD"  # set for the interpreter that measures another checkout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--code", type=Path, default=REPO, help="checkout whose config package is measured")
    args = parser.parse_args()
    if Path(config.__file__).resolve().parents[1] != args.code.resolve():
        if os.environ.get(IN_CHILD):
            raise SystemExit(f"no config package in {args.code}")
        raise SystemExit(measure_in(args.code, args.seeds))
    complete, crashed, mistakes, reported = count(args.seeds)
    print(f"code: {args.code}")
    print(f"configs: {args.seeds}, all mistakes reported: {complete} ({complete / args.seeds:.0%}), crashed: {crashed}")
    print(f"mistakes: {mistakes}, reported: {reported} ({reported / mistakes:.0%})")


def measure_in(checkout: Path, seeds: int) -> int:
    """This script again, in an interpreter whose imports start at `checkout` (its `config` and the
    `container` that reads), then at this checkout (the mistakes); -P keeps the script's folder out."""
    path = os.pathsep.join((str(checkout.resolve()), str(REPO)))
    argv = [sys.executable, "-P", __file__, "--seeds", str(seeds), "--code", str(checkout)]
    return subprocess.run(argv, env={**os.environ, "PYTHONPATH": path, IN_CHILD: "1"}, check=False).returncode


def prod_file() -> Path:
    """The measured checkout's prod.yaml, as its own loader finds it (older checkouts lack environment_file)."""
    if hasattr(config, "environment_file"):
        return config.environment_file("prod")
    from config import loader  # noqa: PLC0415 - only older checkouts reach this

    return loader.ENVIRONMENTS_DIR.joinpath("prod.yaml")


def count(seeds: int) -> tuple[int, int, int, int]:
    """Configs with every mistake reported, crashes, mistakes seeded and mistakes reported."""
    prod = YAML(typ="safe", pure=True).load(prod_file().read_text())
    complete = crashed = mistakes = reported = 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prod.yaml"
        for seed in range(seeds):
            chosen = random.Random(seed).sample(MUTATIONS, k=random.Random(seed).randint(2, 8))
            raw = copy.deepcopy(prod)
            for mutation in chosen:
                mutation.apply(raw)
            with path.open("w") as handle:
                YAML().dump(raw, handle)
            try:
                config.load_config_file(path, "prod")
                paths = []
            except config.ConfigError as error:
                paths = [field for field, _ in error.problems]
            except Exception:  # noqa: BLE001 (a crash is what this counts)
                crashed += 1
                mistakes += len(chosen)
                continue
            found = sum(any(m.leaf in p for p in paths) for m in chosen)
            mistakes += len(chosen)
            reported += found
            complete += found == len(chosen)
    return complete, crashed, mistakes, reported


if __name__ == "__main__":
    main()
