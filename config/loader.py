"""Load and validate an environment's configuration, reporting every problem at once."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from config.checks import INVALID, Problem, check_environment
from config.deployed import Deployed, DeployedRecordError, load_deployed
from config.schema import Catalog, EnvironmentConfig

CONFIG_DIR = Path(__file__).resolve().parent
ENVIRONMENTS_DIR = CONFIG_DIR / "environments"
CATALOG_FILE = CONFIG_DIR / "catalog.yaml"

M = TypeVar("M", bound=BaseModel)


class ConfigError(Exception):
    """A configuration that must not be synthesised. `problems` holds (field path, message) pairs."""

    def __init__(self, source: str, problems: list[Problem]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {len(problems)} problem(s)"]
        lines += [f"  - {path}: {message}" for path, message in problems]
        super().__init__("\n".join(lines))


def known_environments() -> list[str]:
    return sorted(p.stem for p in ENVIRONMENTS_DIR.glob("*.yaml"))


@cache
def load_catalog() -> Catalog:
    return _validate(Catalog, _read_yaml(CATALOG_FILE), str(CATALOG_FILE.name))


def load_config(
    env_name: str, scaling_released: Iterable[str] = (), variants_changed: bool = False
) -> EnvironmentConfig:
    """`scaling_released`: variants whose scaling `python -m ops deploy` has moved aside, so
    their instance-type change or removal can go through CloudFormation. `variants_changed`: the
    deploy goes without the blue/green guardrails, so the set of variant names may change."""
    known = known_environments()
    if env_name not in known:
        raise ConfigError("env", [("env", f"unknown environment '{env_name}'; known: {', '.join(known)}")])
    try:
        deployed = Deployed(load_deployed(env_name), frozenset(scaling_released), variants_changed)
    except DeployedRecordError as error:
        raise ConfigError(error.source, [(error.field, error.message)]) from None
    return load_config_file(ENVIRONMENTS_DIR / f"{env_name}.yaml", env_name, deployed)


def load_config_file(path: Path, env_name: str, deployed: Deployed | None = None) -> EnvironmentConfig:
    """Validate each section on its own so one bad field does not hide the problems elsewhere."""
    source = f"config/environments/{path.name}"
    raw = _read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(source, [("(file)", "must be a mapping of settings")])
    sections, problems = _validate_sections(raw)
    problems += check_environment(sections, load_catalog(), env_name, deployed)
    if problems:
        raise ConfigError(source, problems)
    return EnvironmentConfig.model_validate(raw)


def _validate_sections(raw: dict) -> tuple[dict[str, Any], list[Problem]]:
    """Each top-level field validated alone; invalid ones map to INVALID and are reported."""
    fields = EnvironmentConfig.model_fields
    problems: list[Problem] = [
        (key, f"unknown setting; known: {', '.join(fields)}") for key in raw if key not in fields
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
        try:
            sections[name] = TypeAdapter(Annotated[field.annotation, field]).validate_python(raw[name])
        except ValidationError as error:
            problems += [describe_error({**e, "loc": (name, *e["loc"])}, raw) for e in error.errors()]
            sections[name] = INVALID
    return sections, problems


def _read_yaml(path: Path) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(path.read_text())
    except (OSError, YAMLError) as error:
        raise ConfigError(path.name, [("(file)", str(error).replace("\n", " "))]) from None


def _validate(model: type[M], raw: Any, source: str) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(source, [describe_error(e, raw) for e in error.errors()]) from None


def describe_error(error: dict, raw: Any) -> Problem:
    """Turn a pydantic error into (path, message); list items are named by their `name` field."""
    parts: list[str] = []
    node = raw
    for key in error["loc"]:
        if isinstance(key, int) and isinstance(node, list) and key < len(node):
            item = node[key]
            parts.append(str(item.get("name", key)) if isinstance(item, dict) else str(key))
            node = item
        else:
            parts.append(str(key))
            node = node.get(key) if isinstance(node, dict) else None
    message = error["msg"]
    if error["type"] != "missing":
        message += f", got {error['input']!r}"
    return ".".join(parts) or "(root)", message
