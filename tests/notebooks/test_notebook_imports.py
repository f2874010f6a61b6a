"""Notebooks use txsql's public names only (what ``txsql.__all__`` exports)."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

import txsql

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def _code(path: Path) -> ast.Module:
    """The notebook's code cells as one Python module, magics turned into calls by IPython."""
    notebook = nbformat.read(path, as_version=4)
    cells = [
        TransformerManager().transform_cell(cell.source)
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]
    return ast.parse("\n".join(cells), filename=str(path))


def _txsql_names_used(tree: ast.Module) -> list[str]:
    used = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used += [alias.name for alias in node.names if alias.name.startswith("txsql.")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("txsql"):
            if node.module == "txsql":
                used += [f"txsql.{alias.name}" for alias in node.names]
            else:  # names from a public module (txsql.errors) are public
                used.append(node.module or "")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "txsql"
        ):
            used.append(f"txsql.{node.attr}")
    return used


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_imports_only_public_names(path: Path) -> None:
    public = {f"txsql.{name}" for name in txsql.__all__}
    used = _txsql_names_used(_code(path))
    assert used, "every notebook uses txsql"
    assert [name for name in used if name not in public] == []


def test_the_checker_sees_an_internal_import() -> None:
    tree = ast.parse("from txsql.engine.spark import local_session\nimport txsql\ntxsql.magics")
    assert _txsql_names_used(tree) == ["txsql.engine.spark", "txsql.magics"]
