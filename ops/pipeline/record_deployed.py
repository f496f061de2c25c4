"""`python -m ops.pipeline.record_deployed ENV`: after a successful `make deploy`, write config/deployed/<env>.json.
Not in config/deployed.py, which synth's checks import: config imports one way (loader -> checks -> deployed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from config import deployed, load_environment
from ops.pipeline.assumed_capacity import acceptance


def record(env_name: str) -> None:
    # Not compared with the old record: the deploy that just succeeded may be the change it refuses
    # without `SCALING_RELEASED` / `VARIANTS_CHANGED`.
    cfg = load_environment(env_name, against_deployed=False)
    state = {
        "variants": {
            v.name: {"instance_type": v.instance_type, "scaled": v.name in cfg.autoscaling} for v in cfg.variants
        }
    }
    accepted = acceptance(cfg)  # ACCEPT_ASSUMED_CAPACITY let this deploy through: why, for `ops status`
    if accepted is not None:
        state["accepted_assumed_capacity"] = accepted
    path = deployed.deployed_path(env_name)
    path.write_text(json.dumps(state, indent=2) + "\n")
    print(f"recorded deployed variants of {env_name} in {path.relative_to(Path.cwd())}")
    if accepted is not None:
        print(f"recorded there too: deployed on an assumed capacity of {', '.join(accepted['types'])}, and why")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m ops.pipeline.record_deployed ENV")
    record(sys.argv[1])
