"""Promotion as a config change: the canary's image (and instance type) becomes the primary's in the YAML,
edited through `config.editor` (comments and layout kept, validated as synth validates) and rolled out by the
next deploy's blue/green policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import ConfigError, EnvironmentConfig, environment_file, naming
from config.editor import EnvironmentEdit, UnsafeEdit, edit_environment_file
from ops.operations.environment import config_variant
from ops.operations.errors import ExitCode, OpsError

# What the canary was tested with; both travel to the primary together.
PROMOTED_FIELDS = ("image_tag", "instance_type")


@dataclass(frozen=True)
class Promotion:
    env_name: str
    path: Path
    changes: dict[str, tuple[str, str]]  # field -> (primary's value, canary's value)
    before: str
    after: str

    @property
    def edit(self) -> EnvironmentEdit:
        return EnvironmentEdit(self.path, self.before, self.after)

    def diff(self) -> str:
        return self.edit.diff()


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
            f"change to it: give the canary's build a release tag (docs/how-to/deploy.md, 'Building an image'), name that tag "
            f"in {canary}, deploy, then promote",
            ExitCode.USAGE,
        )

    def promote(document: Any) -> None:
        entry = next(v for v in document["variants"] if v["name"] == primary)
        for field, (_, new) in changes.items():
            entry[field] = new

    try:
        edit = edit_environment_file(environment_file(cfg.name), promote)
    except UnsafeEdit as error:
        raise OpsError(f"{error}: set variants.{primary}.image_tag by hand", ExitCode.USAGE) from None
    return Promotion(cfg.name, edit.path, changes, edit.before, edit.after)


def write_promotion(promotion: Promotion) -> None:
    """Validate the edited file exactly as synth would, then replace the original atomically."""
    try:
        promotion.edit.write()
    except ConfigError as error:
        raise OpsError(f"the promoted config would be invalid, nothing written: {error}", ExitCode.USAGE) from None
