"""The config package imports one way: loading -> checks -> the deployed record, no module importing
back up the chain (issue 20: the circle checks -> deployed -> loader -> checks is gone)."""

from __future__ import annotations

import ast
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / "config"


def module_name(path: Path) -> str:
    """`checks.scaling` for config/checks/scaling.py; a package's __init__ stands for the package."""
    parts = path.relative_to(CONFIG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(module: Path) -> set[str]:
    """Every config module a module imports, at the top or inside a function."""
    found = set()
    tree = ast.parse(module.read_text())
    # Imports only for type checkers never run, so they cannot make a circle at import time.
    typing_only = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for child in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("config"):
            names = [node.module] + [f"config.{a.name}" for a in node.names if node.module == "config"]
            found.update(name.removeprefix("config.") for name in names if name != "config")
    return found


def test_no_config_module_imports_itself_back():
    modules = {module_name(path): path for path in CONFIG.rglob("*.py")}
    graph = {name: imports_of(path) & set(modules) for name, path in modules.items()}
    graph.pop("", None)  # config/__init__.py re-exports the loader
    assert {"loader", "checks", "checks.scaling", "deployed"} <= set(graph)

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for child in graph.get(start, ()):
            if child == target or (child not in seen and reaches(child, target, seen | {child})):
                return True
        return False

    circles = sorted(name for name in graph if reaches(name, name, {name}))
    assert circles == []
