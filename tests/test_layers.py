"""The layer rules of ARCHITECTURE.md, "Layers", checked on the source (no import-linter)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "txsql"
LOWER_LAYERS = ("storage", "dv", "log", "txn")
ORDER = ("storage", "dv", "log", "txn", "engine", "planner", "magics")
FORBIDDEN_BELOW_ENGINE = ("pyspark", "sqlglot", "IPython")
JVM_INTERNALS = ("_jvm", "_jsc", "_jdf", "_gateway", "sparkContext")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def _layer_files(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", LOWER_LAYERS)
def test_lower_layers_never_import_spark_sqlglot_or_ipython(layer: str) -> None:
    for path in _layer_files(layer):
        bad = [n for n in _imports(path) if n.split(".")[0] in FORBIDDEN_BELOW_ENGINE]
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


@pytest.mark.parametrize("layer", ORDER)
def test_dependencies_point_down(layer: str) -> None:
    above = set(ORDER[ORDER.index(layer) + 1 :])
    if layer != "magics":  # the front end sits on Session; nothing else may
        above |= {"session", "table"}
    for path in _layer_files(layer):
        bad = [n for n in _imports(path) if n.startswith("txsql.") and n.split(".")[1] in above]
        assert not bad, f"{path.relative_to(PACKAGE)} imports upper layers {bad}"


@pytest.mark.parametrize("layer", ["engine", "planner", "txn", "log"])
def test_no_jvm_internals_in_core_paths(layer: str) -> None:
    for path in _layer_files(layer):
        if path.name == "spark.py":  # creating a local session is not a core path
            continue
        tree = ast.parse(path.read_text())
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not used & set(JVM_INTERNALS), f"{path.relative_to(PACKAGE)} uses JVM internals"


# Inside the planner: text -> statements (sql) sits below what every statement shares (the
# catalog, the statement context, metrics), which sits below the shared DML machinery (dml),
# which sits below one module per statement (operations), which the dispatch on top uses.
# Every top-level planner module is placed explicitly: a new one must be given a part.
PLANNER_ORDER = ("sql", "shared", "dml", "operations", "dispatch")
PLANNER_TOP_LEVEL = {
    "__init__": "shared",
    "catalog": "shared",
    "catalog_entries": "shared",
    "context": "shared",
    "frames": "shared",
    "idempotent": "shared",
    "locations": "shared",
    "metrics": "shared",
    "schema_catalog": "shared",
    "table_changes": "shared",
    "prepared": "dispatch",
    "registry": "dispatch",
    "transaction_control": "dispatch",
}


def _planner_part(module: str) -> str | None:
    """The part of ``txsql.planner.<...>`` a module name belongs to (None: not planner)."""
    parts = module.split(".")
    if parts[:2] != ["txsql", "planner"] or len(parts) < 3:
        return None
    if parts[2] in PLANNER_ORDER:
        return parts[2]
    return PLANNER_TOP_LEVEL[parts[2]]


def _planner_files() -> list[tuple[Path, str]]:
    found = []
    for path in sorted((PACKAGE / "planner").rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        part = _planner_part(".".join(relative.parts))
        assert part is not None, f"{relative} is not placed in PLANNER_TOP_LEVEL"
        found.append((path, part))
    return found


def test_every_top_level_planner_module_is_placed() -> None:
    modules = {p.stem for p in (PACKAGE / "planner").glob("*.py")}
    assert modules == set(PLANNER_TOP_LEVEL), "place each planner module in PLANNER_TOP_LEVEL"


@pytest.mark.parametrize("part", PLANNER_ORDER[:-1])
def test_planner_parts_point_down(part: str) -> None:
    above = set(PLANNER_ORDER[PLANNER_ORDER.index(part) + 1 :])
    for path, owner in _planner_files():
        if owner != part:
            continue
        bad = [n for n in _imports(path) if _planner_part(n) in above]
        assert not bad, f"{path.relative_to(PACKAGE)} imports upper planner parts {bad}"


def test_planner_sql_builds_statements_without_spark() -> None:
    # Statements must be buildable (and testable) with sqlglot alone.
    for path in sorted((PACKAGE / "planner" / "sql").rglob("*.py")):
        bad = [n for n in _imports(path) if n.split(".")[0] in ("pyspark", "IPython")]
        bad += [n for n in _imports(path) if n.startswith("txsql.engine")]
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"
