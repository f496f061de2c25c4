"""Load and validate an environment's configuration, reporting every problem at once."""

from __future__ import annotations

import codecs
import copy
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.reader import ReaderError

from config.checks import check_environment
from config.checks.vram_budget import kv_sequences
from config.deployed import Deployed, DeployedRecordError, load_deployed
from config.domain.calibration import fill_derived_capacity
from config.domain.prices import catalog_price_problems
from config.problems import (
    MAX_MESSAGE_CHARS,
    MAX_PROBLEMS_SHOWN,
    MAX_QUOTED_CHARS,
    Problem,
    did_you_mean,
    field_path,
    quote,
    shorten,
)
from config.schema import Catalog, EnvironmentConfig
from config.sections import INVALID, field_type, validate_partial

CONFIG_DIR = Path(__file__).resolve().parent
ENVIRONMENTS_DIR = CONFIG_DIR / "environments"
CATALOG_FILE = CONFIG_DIR / "catalog.yaml"
MAX_FILE_BYTES = 256 * 1024  # the shipped files are under 8 KiB

M = TypeVar("M", bound=BaseModel)


class ConfigError(Exception):
    """A configuration that must not be synthesised. `problems` holds (field path, message) pairs."""

    def __init__(self, source: str, problems: list[Problem]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {len(problems)} problem(s)"]
        lines += [
            f"  - {shorten(path, 200)}: {shorten(message, MAX_MESSAGE_CHARS)}"
            for path, message in problems[:MAX_PROBLEMS_SHOWN]
        ]
        if len(problems) > MAX_PROBLEMS_SHOWN:
            lines.append(f"  ... and {len(problems) - MAX_PROBLEMS_SHOWN} more")
        super().__init__("\n".join(lines))


class UnknownEnvironment(ConfigError):
    """No file config/environments/<name>.yaml; `message` says which names exist."""

    def __init__(self, env_name: str, known: list[str]):
        self.message = f"unknown environment '{env_name}'{did_you_mean(env_name, known)}; known: {', '.join(known)}"
        super().__init__("env", [("env", self.message)])


def known_environments() -> list[str]:
    return sorted(p.stem for p in ENVIRONMENTS_DIR.glob("*.yaml"))


@cache
def load_catalog() -> Catalog:
    return validate_catalog(read_yaml(CATALOG_FILE), display_path(CATALOG_FILE))


def validate_catalog(raw: Any, source: str) -> Catalog:
    """The catalog's fields, then what relates them: every instance type names a GPU in `gpus`, whose
    peak figures its physical ceiling is computed from (config/domain/physics.py), and `pricing` prices known
    types (config.domain.prices)."""
    catalog = _validate(Catalog, raw, source)
    problems = [
        (
            field_path("instance_types", name, "gpu"),
            f"{quote(instance.gpu)} is not in gpus{did_you_mean(instance.gpu, catalog.gpus)}; known: "
            f"{', '.join(catalog.gpus)} (add its fp16_dense_tflops, memory_bandwidth_gb_per_s and source)",
        )
        for name, instance in catalog.instance_types.items()
        if instance.gpu not in catalog.gpus
    ]
    problems += catalog_price_problems(catalog)
    if problems:
        raise ConfigError(source, problems)
    return catalog


def environment_file(env_name: str) -> Path:
    """config/environments/<name>.yaml: the one place an environment's file path is built."""
    return ENVIRONMENTS_DIR / f"{env_name}.yaml"


def load_environment(
    env_name: str,
    *,
    against_deployed: bool = True,
    scaling_released: Iterable[str] = (),
    variants_changed: bool = False,
) -> EnvironmentConfig:
    """The environment's validated config: the one loader for app.py, ops, planner, review, capacity.

    `against_deployed` (synth's default) also compares the config with what was last deployed
    (config/deployed/); that comparison stops synth from attempting the changes `ops deploy` is there
    to carry out, so the operations commands pass False: a pending change must not stop an operator
    from reading status. `scaling_released`: variants whose scaling `python -m ops deploy` has moved
    aside, so their instance-type change or removal can go through CloudFormation. `variants_changed`:
    the deploy goes without the blue/green guardrails, so the set of variant names may change.
    """
    known = known_environments()
    if env_name not in known:
        raise UnknownEnvironment(env_name, known)
    deployed = None
    if against_deployed:
        try:
            deployed = Deployed(load_deployed(env_name), frozenset(scaling_released), variants_changed)
        except DeployedRecordError as error:
            raise ConfigError(error.source, [(error.field, error.message)]) from None
    return load_config_file(environment_file(env_name), env_name, deployed)


def load_config_file(path: Path, env_name: str, deployed: Deployed | None = None) -> EnvironmentConfig:
    """An environment's config from any file (another revision's, a staged edit), validated as
    `load_environment` does. Each section is validated on its own so one bad field does not hide the
    problems elsewhere."""
    source = display_path(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(source, [("(file)", f"must be a mapping of settings, got {quote(raw)}")])
    sections, problems = _validate_sections(raw)
    problems += check_environment(sections, load_catalog(), env_name, deployed)
    if problems:
        raise ConfigError(source, problems)
    cfg = EnvironmentConfig.model_validate(raw)
    catalog = load_catalog()
    fill_derived_capacity(cfg, catalog, lambda t: kv_sequences(cfg, catalog, t))  # config.domain.calibration
    return cfg


def _validate_sections(raw: dict) -> tuple[dict[str, Any], list[Problem]]:
    """Each top-level field validated alone and kept as far as it is valid (config.sections).

    A failed leaf becomes INVALID inside its section, so the checks that do not read it still run.
    """
    fields = EnvironmentConfig.model_fields
    problems: list[Problem] = [
        (field_path(key), f"unknown setting{did_you_mean(key, fields)}; known: {', '.join(fields)}")
        for key in raw
        if key not in fields
    ]
    sections: dict[str, Any] = {}
    for name, field in fields.items():
        if name not in raw:
            if field.is_required():
                problems.append((name, "Field required"))
                sections[name] = INVALID
            else:
                sections[name] = field.get_default(call_default_factory=True)
            continue
        sections[name], errors = validate_partial(field_type(field), raw[name])
        problems += [describe_error({**e, "loc": (name, *e["loc"])}, raw) for e in errors]
    return sections, problems


def display_path(path: Path) -> str:
    """The file as a user would type it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_yaml(path: Path) -> Any:
    """Plain YAML data from a UTF-8 file; anything else is a ConfigError naming the file.

    Aliases and anchors are refused before anything is built: a few hundred bytes of nested
    aliases expand to gigabytes ("billion laughs"), and a settings file has no need for them.
    Each call returns its own copy: callers may change what they get.
    """
    source = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(source, [("(file)", f"cannot read: {error.strerror or error}")]) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            source, [("(file)", f"is {len(data):,} bytes; a settings file is at most {MAX_FILE_BYTES:,}")]
        )
    text = _decode(data, source)
    try:
        return copy.deepcopy(_parse_yaml(text))
    except _YamlRefused as refused:
        raise ConfigError(source, [("(file)", str(refused))]) from None


class _YamlRefused(Exception):
    """Text read_yaml refuses; read_yaml names the file."""


# Keyed by the text alone (a copy of a file in another directory hits too): a file read again
# unchanged is not parsed again. The pure-Python parser takes ~40 ms of CPU for prod.yaml (two passes:
# the alias check, then the load); an ops command reads its environment's file twice (identity, then
# the whole config), a test process hundreds of times. A refusal raises, so it is never cached.
@lru_cache(maxsize=32)
def _parse_yaml(text: str) -> Any:
    yaml = YAML(typ="safe", pure=True)
    try:
        for event in yaml.parse(text):
            if isinstance(event, AliasEvent) or getattr(event, "anchor", None) is not None:
                where = _line(event.start_mark)
                raise _YamlRefused(
                    f"{where}YAML anchors and aliases (&name, *name) are not allowed; write the values out"
                )
        return yaml.load(text)
    except YAMLError as error:
        raise _YamlRefused(f"not valid YAML: {_yaml_message(error)}") from None


def _decode(data: bytes, source: str) -> str:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError(source, [("(file)", "is UTF-16; save it as UTF-8")])
    if b"\x00" in data:  # valid UTF-8, but never in text: UTF-16 without a byte-order mark, or binary
        raise ConfigError(source, [("(file)", "contains NUL bytes (UTF-16 or binary?); save it as UTF-8 text")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        byte = data[error.start : error.start + 1].hex()
        raise ConfigError(
            source, [("(file)", f"is not UTF-8: byte 0x{byte} at line {line} (offset {error.start}); save it as UTF-8")]
        ) from None


def _line(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _yaml_message(error: YAMLError) -> str:
    """ruamel's message without its `<unicode string>` file name and source excerpt."""
    if isinstance(error, MarkedYAMLError):
        context = f"{error.context} " if error.context else ""
        return shorten(f"{_line(error.problem_mark)}{context}{error.problem}", MAX_QUOTED_CHARS)
    if isinstance(error, ReaderError):
        return f"position {error.position}: character {error.character!r} is not allowed in YAML"
    return shorten(" ".join(str(error).split()), MAX_QUOTED_CHARS)


def _validate(model: type[M], raw: Any, source: str) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(source, [describe_error(e, raw) for e in error.errors()]) from None


def describe_error(error: dict, raw: Any = None) -> Problem:
    """Turn a pydantic error into (path, message) in the one path notation of config.problems."""
    message = error["msg"]
    if error["type"] != "missing":
        message += f", got {quote(error['input'])}"
    return field_path(*error["loc"]), message
