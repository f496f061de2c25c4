"""The layering rules of issue 26, read from the source with `ast` so a new module cannot slip past them:
libraries never import the operations CLI, product code never reaches into tests/, config/ holds no
command-line program, an environment's file path is built in one place, and no function grows past
what a reader can hold (70 lines, docstring excluded)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"node_modules", "cdk.out", "tests", "plan-out", "review-out", "capacity-out"}  # and every .dir (.venv*)
LIBRARIES = ("capacity", "config", "planner", "container")  # may not import `ops`
MAX_FUNCTION_LINES = 70
MAX_OPS_CLI_LINES = 496  # ops/cli.py when issue 26 was filed: commands go to modules of their own


def product_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not any(part in SKIPPED or part.startswith(".") for part in path.relative_to(ROOT).parts)
    )


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_walk_sees_the_product_code():
    files = {relative(p) for p in product_files()}
    assert {"app.py", "ops/cli.py", "capacity/sweep.py", "config/loader.py", "container/serving/middleware.py"} <= files
    assert not any(name.startswith("tests/") for name in files)


@pytest.mark.parametrize("package", LIBRARIES)
def test_libraries_do_not_import_the_operations_cli(package):
    offenders = {
        relative(path): sorted(name for name in imported_modules(path) if name == "ops" or name.startswith("ops."))
        for path in product_files()
        if relative(path).startswith(f"{package}/")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_nothing_outside_tests_imports_tests_or_edits_sys_path():
    found = []
    for path in product_files():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [f"{relative(path)}: imports {m}" for m in modules if m == "tests" or m.startswith("tests.")]
            if isinstance(node, ast.Attribute) and node.attr == "path" and _is_name(node.value, "sys"):
                found.append(f"{relative(path)}:{node.lineno}: uses sys.path")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("tests/"):
                found.append(f"{relative(path)}:{node.lineno}: names {node.value}")
    assert found == []


def test_config_holds_no_command_line_program():
    found = []
    for path in product_files():
        if not relative(path).startswith("config/"):
            continue
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.FunctionDef) and node.name == "main":
                found.append(f"{relative(path)}: def main")
            if isinstance(node, ast.Compare) and _is_name(node.left, "__name__"):
                found.append(f"{relative(path)}:{node.lineno}: __name__ check")
    assert found == []


def test_the_environment_file_path_is_built_in_one_place():
    builders = []
    for path in product_files():
        text = path.read_text()
        if "ENVIRONMENTS_DIR /" in text or "config/environments/{" in text or '"environments" /' in text:
            builders.append(relative(path))
    assert builders == ["config/loader.py", "config/naming.py"]


def test_no_function_is_longer_than_a_reader_can_hold():
    long = []
    for path in product_files():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    body = body[1:]  # the docstring does not count
                if body and (lines := body[-1].end_lineno - body[0].lineno + 1) > MAX_FUNCTION_LINES:
                    long.append(f"{relative(path)}:{node.lineno} {node.name}: {lines} lines")
    assert long == []


def test_the_operations_cli_does_not_grow():
    assert len((ROOT / "ops" / "cli.py").read_text().splitlines()) <= MAX_OPS_CLI_LINES


def test_the_rules_can_fail(tmp_path):
    """The checks above read real syntax: a planted offender is found by each helper."""
    planted = tmp_path / "planted.py"
    planted.write_text("import sys\nfrom ops.cli import app\nsys.path.insert(0, 'tests/x')\n" + _long_function())
    assert "ops.cli" in imported_modules(planted)
    attributes = [n for n in ast.walk(tree(planted)) if isinstance(n, ast.Attribute)]
    assert any(n.attr == "path" and _is_name(n.value, "sys") for n in attributes)
    function = next(n for n in ast.walk(tree(planted)) if isinstance(n, ast.FunctionDef))
    assert function.body[-1].end_lineno - function.body[0].lineno + 1 > MAX_FUNCTION_LINES


def _long_function() -> str:
    return "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES + 1))


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
