"""What was last deployed per environment: the variants and their instance types.

`make deploy` records it after a successful deploy (`python -m config.deployed record ENV`) and it is
committed with the config. Synth compares against it to refuse, before CloudFormation tries, the
updates SageMaker rejects while a variant is registered with Application Auto Scaling: changing a
scaled variant's instance type, or removing a scaled variant.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEPLOYED_DIR = Path(__file__).resolve().parent / "deployed"


def deployed_path(env_name: str) -> Path:
    return DEPLOYED_DIR / f"{env_name}.json"


def load_deployed(env_name: str) -> dict[str, str]:
    """Variant name -> instance type as last deployed; empty before the first deploy."""
    path = deployed_path(env_name)
    if not path.exists():
        return {}
    return json.loads(path.read_text())["variants"]


def record(env_name: str) -> None:
    from config.loader import load_config  # late import: this module is also imported by the loader

    cfg = load_config(env_name)
    state = {"variants": {v.name: v.instance_type for v in cfg.variants}}
    deployed_path(env_name).write_text(json.dumps(state, indent=2) + "\n")
    print(f"recorded deployed variants of {env_name} in {deployed_path(env_name).relative_to(Path.cwd())}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python -m config.deployed record ENV")
    record(sys.argv[2])
