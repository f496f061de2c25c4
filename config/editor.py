"""The one way to change an environment's YAML file (`ops promote`, `ops capacity --write-config`, and
every writer to come): a ruamel.yaml round trip that keeps comments, quoting and layout; the result
validated by the loader synth uses, from a staged copy beside the original; then the original
replaced atomically (os.replace), so a reader never sees half a file and an invalid edit is never
written. An environment's file is named after it (`config.environment_file`), so the file's stem is
the environment name the result is validated as.
"""

from __future__ import annotations

import difflib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from config.loader import ConfigError, load_config_file
from config.naming import environment_label
from config.schema import EnvironmentConfig


class UnsafeEdit(Exception):
    """A file a round trip would reformat: an edit would rewrite lines nobody asked to change."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(f"{path.name} would be reformatted by a round trip, so it cannot be edited safely")


@dataclass(frozen=True)
class EnvironmentEdit:
    """A change to one environment's file, computed but not yet written."""

    path: Path
    before: str
    after: str

    @property
    def env_name(self) -> str:
        return self.path.stem

    @property
    def changed(self) -> bool:
        return self.after != self.before

    def diff(self) -> str:
        name = environment_label(self.env_name)
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True), name, name, n=1
        )
        return "".join(lines)

    def write(self) -> EnvironmentConfig:
        """Validate the edited file exactly as synth would, then replace the original atomically.
        An invalid result raises the loader's ConfigError and leaves the original (and no staged copy)."""
        staged = self.path.with_name(f".{self.path.name}.edit")  # same directory: os.replace stays atomic
        staged.write_text(self.after)
        try:
            cfg = load_config_file(staged, self.env_name)
        except ConfigError:
            staged.unlink()
            raise
        os.replace(staged, self.path)
        return cfg


def edit_environment_file(path: Path, change: Callable[[Any], None]) -> EnvironmentEdit:
    """The file with `change` applied to its round-tripped document (a ruamel CommentedMap, edited in
    place). Raises UnsafeEdit when the round trip alone would not reproduce the file byte for byte."""
    before = path.read_text()
    yaml = round_trip_yaml()
    document = yaml.load(before)
    if _dump(yaml, document) != before:
        raise UnsafeEdit(path)
    change(document)
    return EnvironmentEdit(path, before, _dump(yaml, document))


def round_trip_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)  # the layout of config/environments/*.yaml
    yaml.width = 4096  # never re-wrap long lines
    return yaml


def _dump(yaml: YAML, document: object) -> str:
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    return buffer.getvalue()
