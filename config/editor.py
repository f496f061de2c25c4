"""The one way to change an environment's YAML file (`ops promote`, `bin/loadtest --write-config`,
`ops scaling-history --write-config`, and every writer to come): the change is made on a ruamel.yaml
round-trip document, then written back as line edits of the original text (config/yaml_splice.py), so
every line outside the changed keys stays byte for byte; the result is validated by the loader synth
uses, from a staged copy beside the original; then the original is replaced atomically (os.replace),
so a reader never sees half a file and a file that would refuse synth is never written. An
environment's file is named after it (`config.environment_file`), so the file's stem is the
environment name the result is validated as.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from config.loader import ConfigError, display_path, load_config_file
from config.naming import environment_label
from config.problems import Problem
from config.schema import EnvironmentConfig
from config.yaml_splice import SpliceError, splice


class UnsafeEdit(Exception):
    """A file whose layout the line edits cannot change safely: nothing is written."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(f"{path.name} has a layout the editor cannot change line by line, so it was not edited")


class EditRefused(ConfigError):
    """The edited file would refuse synth. `problems`: what the change would bring in (the problems
    the file already had before it when it brings none); `already`: those earlier problems."""

    def __init__(self, path: Path, brought: list[Problem], already: list[Problem]):
        self.file, self.brought, self.already = display_path(path), brought, already
        if brought:
            earlier = f" (and {len(already)} it already had)" if already else ""
            super().__init__(f"{self.file} after this change{earlier}", brought)
        else:
            super().__init__(f"{self.file} (already invalid before this change)", already)


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
        A result that would not load raises EditRefused (a ConfigError) and leaves the original (and
        no staged copy)."""
        staged = self.path.with_name(f".{self.path.name}.edit")  # same directory: os.replace stays atomic
        staged.write_text(self.after)
        try:
            cfg = load_config_file(staged, self.env_name)
        except ConfigError as error:
            staged.unlink()
            raise self._refusal(error) from None
        os.replace(staged, self.path)
        return cfg

    def _refusal(self, error: ConfigError) -> EditRefused:
        """The problems this change brings, told apart from those the file had before it."""
        try:
            load_config_file(self.path, self.env_name)
            already: list[Problem] = []
        except ConfigError as before:
            already = before.problems
        known = {path for path, _ in already}
        return EditRefused(self.path, [p for p in error.problems if p[0] not in known], already)


def edit_environment_file(path: Path, change: Callable[[Any], None]) -> EnvironmentEdit:
    """The file with `change` applied to its round-trip document (a ruamel CommentedMap, edited in
    place), written back as line edits. UnsafeEdit when the edits cannot reproduce the change."""
    before = path.read_text()
    yaml = round_trip_yaml()
    original, document = yaml.load(before), yaml.load(before)
    if not isinstance(original, CommentedMap) or not original:
        raise UnsafeEdit(path)
    change(document)
    try:
        after = splice(before, original, document, yaml)
    except SpliceError:
        raise UnsafeEdit(path) from None
    return EnvironmentEdit(path, before, after)


def round_trip_yaml() -> YAML:
    """The layout of config/environments/*.yaml, for what the editor renders (changed keys only)."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never re-wrap long lines
    return yaml
