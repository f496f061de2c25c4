"""The layering rules of issue 26, read from the source with `ast` so a new module cannot slip past them:
libraries never import the operations CLI, product code never reaches into tests/, config/ holds no
command-line program, an environment's file path is built in one place, and no function grows past
what a reader can hold (70 lines, docstring excluded)."""

from __future__ import annotations

import ast
import os
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"node_modules", "cdk.out", "tests", "plan-out", "review-out", "capacity-out"}  # and every .dir (.venv*)
# What each library may not import: config and the serving image sit below ops; the workbench's libraries
# may use the product's operations library (the planner reads the traffic CSV through ops/operations/traffic_csv.py),
# never its command line.
LIBRARIES = {"config": "ops", "container": "ops", "workbench/loadtest": "ops", "workbench/planner": "ops.commands"}
# The load test's command and its deployed-variant target run on the ops CLI's runtime (the workbench may
# import the product); the measuring library beside them may not.
LOAD_TEST_COMMAND = (
    "workbench/loadtest/__main__.py",
    "workbench/loadtest/cli.py",
    "workbench/loadtest/endpoint_target.py",
)
# ...and a library's own command (its `__main__.py`: `python -m workbench.planner`) ends on Ctrl-C, SIGTERM and
# SIGHUP as every command does, through the one handler (issue 49): the library itself still imports nothing of ops.
ENTRY_POINT_HANDLER = "ops.operations.interrupts"
MAX_FUNCTION_LINES = 70
MAX_OPS_CLI_LINES = 496  # ops/commands/cli.py when issue 26 was filed: commands go to modules of their own


@cache
def product_files() -> tuple[Path, ...]:
    """Every product .py file, read once per run; skipped folders are pruned, not walked (.venv and
    node_modules hold tens of thousands of files)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED and not name.startswith(".")]
        found += [Path(folder, name) for name in files if name.endswith(".py") and not name.startswith(".")]
    return tuple(sorted(found))


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
    assert {
        "app.py",
        "ops/commands/cli.py",
        "workbench/loadtest/sweep.py",
        "config/loader.py",
        "container/serving/middleware.py",
    } <= files
    assert not any(name.startswith("tests/") for name in files)


@pytest.mark.parametrize(("package", "forbidden"), LIBRARIES.items())
def test_libraries_do_not_import_the_operations_cli(package, forbidden):
    offenders = {
        relative(path): sorted(
            n
            for n in imported_modules(path)
            if (n == forbidden or n.startswith(f"{forbidden}."))
            and not (path.name == "__main__.py" and n == ENTRY_POINT_HANDLER)
        )
        for path in product_files()
        if relative(path).startswith(f"{package}/") and relative(path) not in LOAD_TEST_COMMAND
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
    assert len((ROOT / "ops" / "commands" / "cli.py").read_text().splitlines()) <= MAX_OPS_CLI_LINES


def test_the_rules_can_fail(tmp_path):
    """The checks above read real syntax: a planted offender is found by each helper."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import sys\nfrom ops.commands.cli import app\nsys.path.insert(0, 'tests/x')\n" + _long_function()
    )
    assert "ops.commands.cli" in imported_modules(planted)
    attributes = [n for n in ast.walk(tree(planted)) if isinstance(n, ast.Attribute)]
    assert any(n.attr == "path" and _is_name(n.value, "sys") for n in attributes)
    function = next(n for n in ast.walk(tree(planted)) if isinstance(n, ast.FunctionDef))
    assert function.body[-1].end_lineno - function.body[0].lineno + 1 > MAX_FUNCTION_LINES


def _long_function() -> str:
    return "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES + 1))


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


# --- layers: no import circles, config reaches no higher layer (issue 36 item 3) -----------------------

HIGHER_LAYERS = ("ops", "workbench")  # config/ may neither import nor name them


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> set[str]:
    """Every module `path` imports, TYPE_CHECKING blocks included (a circle there is still a circle for
    the reader); `from a import b` names both a and a.b, relative imports resolved."""
    names: set[str] = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            package = module_name(path).split(".")[: -1 if path.name != "__init__.py" else None] if node.level else []
            base = ".".join(package[: len(package) - node.level + 1])
            module = ".".join(part for part in (base, node.module or "") if part) if node.level else node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """{project module: the project modules it imports}."""
    modules = {module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {m for m in imported_names(path) if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_among_the_projects_modules():
    found = circles(import_graph(product_files()))
    assert sorted(map(sorted, found)) == []


def docstring_nodes(module: ast.Module) -> set[int]:
    nodes = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                nodes.add(id(first.value))
    return nodes


def higher_layer_references(path: Path) -> list[str]:
    """Imports of a higher layer, string constants naming a file in one (docstrings aside), and path
    joins (`x / "capacity"`) into one."""
    found = [f"imports {name}" for name in sorted(imported_names(path)) if name.split(".")[0] in HIGHER_LAYERS]
    module, docs = tree(path), docstring_nodes(tree(path))
    prefixes = tuple(f"{layer}/" for layer in HIGHER_LAYERS)
    for node in ast.walk(module):
        names_a_file = (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(prefixes)
        )
        if names_a_file and id(node) not in docs:
            found.append(f"line {node.lineno}: names {node.value!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value in HIGHER_LAYERS:
                    found.append(f"line {node.lineno}: joins a path into {side.value}/")
    return found


def test_config_references_no_path_in_a_higher_layer_and_imports_none():
    found = {
        relative(path): refs
        for path in product_files()
        if relative(path).startswith("config/") and (refs := higher_layer_references(path))
    }
    assert found == {}


def test_the_layer_rules_can_fail(tmp_path):
    """Planted offenders: a two-module circle and a config module reaching into capacity/."""
    (tmp_path / "pkg").mkdir()
    first, second = tmp_path / "pkg" / "a.py", tmp_path / "pkg" / "b.py"
    first.write_text("from pkg import b\n")
    second.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n")
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""workbench/loadtest/workload.yaml in a docstring is prose."""\nfrom pathlib import Path\n'
        'from workbench.loadtest import W\nF = Path(__file__).parents[1] / "workbench" / "workload.yaml"\n'
        'G = "workbench/planner/reference_week.yaml"\n'
    )
    graph = {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert circles(graph) == [{"pkg.a", "pkg.b"}]
    found = higher_layer_references(planted)
    assert sorted(found) == [
        "imports workbench.loadtest",
        "imports workbench.loadtest.W",
        "line 4: joins a path into workbench/",
        "line 5: names 'workbench/planner/reference_week.yaml'",
    ]


def test_ops_shows_its_shape():
    """Issue 36: ops/ holds its entry points and three packages (issue 49: the make steps in pipeline/); a new
    module picks a side."""
    top = sorted(p.name for p in (ROOT / "ops").iterdir() if not p.name.startswith((".", "__pycache__")))
    assert top == ["__init__.py", "__main__.py", "commands", "operations", "pipeline"]


def test_operations_do_not_import_the_command_line():
    """A library never imports the CLI that wraps it (DESIGN.md section 5): ops.operations stands alone."""
    offenders = {
        relative(path): sorted(n for n in imported_modules(path) if n.split(".")[:2] == ["ops", "commands"])
        for path in product_files()
        if relative(path).startswith("ops/operations/")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


# --- the product boundary (issue 49) ---------------------------------------------------------------------

PRODUCT = ("app.py", "config/", "stacks/", "constructs/", "container/", "ops/")


def test_the_product_never_imports_the_workbench():
    offenders = {
        relative(path): sorted(n for n in imported_names(path) if n.split(".")[0] == "workbench")
        for path in product_files()
        if relative(path).startswith(PRODUCT)
    }
    assert {path: names for path, names in offenders.items() if names} == {}


# --- narrow props (issue 49 item 4) ----------------------------------------------------------------------

ENVIRONMENT_CONFIG = "EnvironmentConfig"


def identifiers(path: Path) -> set[str]:
    """Every name the code uses: variables and annotations, attributes, imported names and their aliases."""
    found: set[str] = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.update(name for name in (node.name.split(".")[-1], node.asname) if name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            found.add(node.value)  # a quoted annotation
    return found


def test_no_construct_names_the_environment_config():
    """Each construct takes the values it uses as props (DESIGN.md section 5); stacks/serving_props.py and
    the stacks translate config into them."""
    constructs = [path for path in product_files() if relative(path).startswith("constructs/")]
    assert [relative(path) for path in constructs if ENVIRONMENT_CONFIG in identifiers(path)] == []


def test_constructs_take_props_not_configs_schema():
    """Nor a section of it: a construct may import config's shared names (config.access, config.naming,
    config.metric_names), never its models."""
    constructs = [path for path in product_files() if relative(path).startswith("constructs/")]
    assert [relative(path) for path in constructs if "config.schema" in imported_modules(path)] == []


def test_the_props_rule_can_fail(tmp_path):
    """Planted: an import, an annotation through the module, and a quoted annotation."""
    for source in (
        "from config.schema import EnvironmentConfig\n",
        "import config.schema\ndef f(cfg: config.schema.EnvironmentConfig): ...\n",
        "def f(cfg: 'EnvironmentConfig'): ...\n",
    ):
        planted = tmp_path / f"planted{len(source)}.py"
        planted.write_text(source)
        assert ENVIRONMENT_CONFIG in identifiers(planted), source
    prose = tmp_path / "prose.py"
    prose.write_text('"""Takes props, not the EnvironmentConfig."""\n')
    assert ENVIRONMENT_CONFIG not in identifiers(prose)
