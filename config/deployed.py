"""What was last deployed per environment: each variant's instance type and whether it was scaled.

`make deploy` records it after a successful deploy (`python -m ops.pipeline.record_deployed ENV`) and it is
committed with the config. Synth compares against it (config/checks/deployed.py) to refuse, before
CloudFormation tries, the updates SageMaker rejects: a changed set of variant names under the
blue/green guardrails, and a changed instance type or a removal of a variant registered with
Application Auto Scaling. `scaled` is recorded because the config alone cannot tell: an edit that
deletes a variant's `autoscaling` entry does not deregister the live scalable target.

Format (config/deployed/<env>.json):
    {"variants": {"primary": {"instance_type": "ml.g5.xlarge", "scaled": true}, ...},
     "accepted_assumed_capacity": {"reason": "...", "types": ["ml.g6.xlarge"], "by": "...", "at": "..."}}
The second key only when a production deploy went out on an assumed capacity with
`ACCEPT_ASSUMED_CAPACITY="<reason>"` (ops/pipeline/assumed_capacity.py); `bin/ops status` shows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DEPLOYED_DIR = Path(__file__).resolve().parent / "deployed"


@dataclass(frozen=True)
class DeployedVariant:
    instance_type: str
    scaled: bool  # registered with Application Auto Scaling when it was deployed


@dataclass(frozen=True)
class Deployed:
    """The record, plus what this deploy was explicitly allowed to change against it."""

    variants: dict[str, DeployedVariant]
    scaling_released: frozenset[str] = frozenset()  # scaling moved aside by `python -m ops deploy`
    variants_changed: bool = False  # `make deploy VARIANTS_CHANGED=1`: an unguarded update may change names


class DeployedRecordError(ValueError):
    """A record that cannot be read, named like a config problem: file, field, message."""

    def __init__(self, source: str, field: str, message: str) -> None:
        super().__init__(f"{source}: {field}: {message}")
        self.source, self.field, self.message = source, field, message


def deployed_path(env_name: str) -> Path:
    return DEPLOYED_DIR / f"{env_name}.json"


def load_deployed(env_name: str) -> dict[str, DeployedVariant]:
    """Variant name -> what was last deployed; empty before the first deploy."""
    path = deployed_path(env_name)
    if not path.exists():
        return {}
    return parse_deployed(path.read_text(), f"config/deployed/{path.name}")


@dataclass(frozen=True)
class Acceptance:
    """Why a production deploy went out while these types' capacity was assumed, who said so, when."""

    reason: str
    types: tuple[str, ...]
    by: str
    at: str  # ISO 8601, UTC

    def describe(self) -> str:
        return (
            f"deployed on an assumed capacity of {', '.join(self.types)}, accepted {self.at[:16].replace('T', ' ')} "
            f"UTC by {self.by}: {self.reason!r}"
        )


def load_acceptance(env_name: str) -> Acceptance | None:
    """The last deploy's ACCEPT_ASSUMED_CAPACITY, or None (none given, no record, or one unreadable)."""
    try:
        raw = json.loads(deployed_path(env_name).read_text())["accepted_assumed_capacity"]
        return Acceptance(str(raw["reason"]), tuple(raw["types"]), str(raw["by"]), str(raw["at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def parse_deployed(text: str, source: str) -> dict[str, DeployedVariant]:
    try:
        variants = json.loads(text)["variants"]
    except (ValueError, KeyError, TypeError):
        raise DeployedRecordError(source, "(file)", 'must be JSON {"variants": {NAME: {...}}}') from None
    record = {}
    for name, entry in variants.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("instance_type"), str)
            and isinstance(entry.get("scaled"), bool)
        ):
            raise DeployedRecordError(
                source,
                f"variants.{name}",
                f'must be {{"instance_type": "ml....", "scaled": true|false}}, got {json.dumps(entry)} '
                "(written by `make deploy`; a record from before `scaled` was recorded: add it by hand)",
            )
        record[name] = DeployedVariant(entry["instance_type"], entry["scaled"])
    return record
