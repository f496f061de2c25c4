"""How many seeded multi-mistake configs report every mistake (`make test` asserts it; this counts).

Each seed applies 2-8 of the independent mistakes in tests/cdk/config_mutations.py to prod.yaml and
loads it. A config counts as fully reported when every mistake's field appears in a problem path
(matched by the field's own name, so older path notations count too); a Python exception other
than ConfigError counts as a crash. Run from the repository root, or point --code at another
checkout to compare (its `config` package is imported, the mistakes come from this one):

    .venv/bin/python benchmarks/config_problem_recall.py --seeds 200
    .venv/bin/python benchmarks/config_problem_recall.py --seeds 200 --code /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--code", type=Path, default=HERE, help="checkout whose config package is measured")
    args = parser.parse_args()
    sys.path[:0] = [str(args.code), str(HERE / "tests" / "cdk")]
    from config_mutations import MUTATIONS
    from ruamel.yaml import YAML

    from config import ConfigError, load_config_file

    prod = YAML(typ="safe", pure=True).load((args.code / "config" / "environments" / "prod.yaml").read_text())
    complete = crashed = mistakes = reported = 0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prod.yaml"
        for seed in range(args.seeds):
            chosen = random.Random(seed).sample(MUTATIONS, k=random.Random(seed).randint(2, 8))
            raw = copy.deepcopy(prod)
            for mutation in chosen:
                mutation.apply(raw)
            with path.open("w") as handle:
                YAML().dump(raw, handle)
            try:
                load_config_file(path, "prod")
                paths = []
            except ConfigError as error:
                paths = [field for field, _ in error.problems]
            except Exception:  # noqa: BLE001 (a crash is what this counts)
                crashed += 1
                mistakes += len(chosen)
                continue
            found = sum(any(m.leaf in p for p in paths) for m in chosen)
            mistakes += len(chosen)
            reported += found
            complete += found == len(chosen)
    print(f"code: {args.code}")
    print(f"configs: {args.seeds}, all mistakes reported: {complete} ({complete / args.seeds:.0%}), crashed: {crashed}")
    print(f"mistakes: {mistakes}, reported: {reported} ({reported / mistakes:.0%})")


if __name__ == "__main__":
    main()
