"""Promotion as a config change: the canary's image (and instance type) becomes the primary's in the
environment's YAML, so the next deploy rolls it out through CloudFormation's blue/green policy and the
template never disagrees with the live endpoint.

The file is edited with ruamel.yaml's round-trip mode, which keeps comments, quoting and layout; the
result is validated with the same loader synth uses before it replaces the original.
"""

from __future__ import annotations

import difflib
import io
import os
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML

from config import ConfigError, EnvironmentConfig, environment_file, environment_label, load_config_file, naming
from ops.environment import config_variant
from ops.errors import ExitCode, OpsError

# What the canary was tested with; both travel to the primary together.
PROMOTED_FIELDS = ("image_tag", "instance_type")


@dataclass(frozen=True)
class Promotion:
    env_name: str
    path: Path
    changes: dict[str, tuple[str, str]]  # field -> (primary's value, canary's value)
    before: str
    after: str

    def diff(self) -> str:
        name = environment_label(self.path.stem)
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True), name, name, n=1
        )
        return "".join(lines)


def plan_promotion(cfg: EnvironmentConfig, primary: str, canary: str) -> Promotion:
    source, target = config_variant(cfg, canary), config_variant(cfg, primary)
    changes = {
        field: (getattr(target, field), getattr(source, field))
        for field in PROMOTED_FIELDS
        if getattr(target, field) != getattr(source, field)
    }
    if changes.get("image_tag", (None, None))[1] == naming.SOURCE_IMAGE_TAG:
        raise OpsError(
            f"{canary} names image_tag: source, which follows container/ and would move the primary with every "
            f"change to it: give the canary's build a release tag (docs/deploying.md, 'Building an image'), name that tag "
            f"in {canary}, deploy, then promote",
            ExitCode.USAGE,
        )
    path = environment_file(cfg.name)
    before = path.read_text()
    yaml = _round_trip_yaml()
    document = yaml.load(before)
    if _dump(yaml, document) != before:
        raise OpsError(
            f"{path.name} would be reformatted by a round trip, so it cannot be edited safely: "
            f"set variants.{primary}.image_tag by hand",
            ExitCode.USAGE,
        )
    entry = next(v for v in document["variants"] if v["name"] == primary)
    for field, (_, new) in changes.items():
        entry[field] = new
    return Promotion(cfg.name, path, changes, before, _dump(yaml, document))


def write_promotion(promotion: Promotion) -> None:
    """Validate the edited file exactly as synth would, then replace the original atomically."""
    staged = promotion.path.with_name(f".{promotion.path.name}.promote")
    staged.write_text(promotion.after)
    try:
        load_config_file(staged, promotion.env_name)
    except ConfigError as error:
        staged.unlink()
        raise OpsError(f"the promoted config would be invalid, nothing written: {error}", ExitCode.USAGE) from None
    os.replace(staged, promotion.path)


def _round_trip_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)  # the layout of config/environments/*.yaml
    yaml.width = 4096  # never re-wrap long lines
    return yaml


def _dump(yaml: YAML, document: object) -> str:
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    return buffer.getvalue()
