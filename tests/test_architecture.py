"""ARCHITECTURE.md stays true: every file, folder and txsql module it names exists.

Three kinds of names are checked, wherever they appear in the document (prose, tables,
code blocks):

* paths from the repository root (``txsql/txn/commit/loop.py``, ``tests/interop/readers.py``,
  ``benchmarks/README.md``) and root files (``README.md``);
* paths inside the package written without ``txsql/`` (``planner/operations/merge/``),
  recognised by their first part being a txsql subpackage;
* module files named in backticks without a folder (``ddl.py``): some file of the
  package, the tests or the benchmarks has that name;
* dotted names starting with ``txsql.``: a module or package, optionally followed by a
  name the module defines at top level (``txsql.planner.registry.STATEMENTS``). A dotted
  name that is no module must be a configuration key the package spells literally
  (``txsql.rowLevelConcurrency``).

Placeholders (``tests/<subpackage>/test_<module>.py``) are checked up to the first ``<``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "txsql"
DOCUMENT = ROOT / "ARCHITECTURE.md"

TOP_FOLDERS = ("txsql", "tests", "benchmarks", "notebooks")
SUBPACKAGES = tuple(sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()))
ROOT_FILES = re.compile(r"`([A-Za-z_]+\.(?:md|toml))`")
# A path: a known first part, then name characters and slashes (stops at ``<``, spaces...).
FIRST_PARTS = "|".join(map(re.escape, TOP_FOLDERS + SUBPACKAGES))
PATH = re.compile(rf"(?<![\w./<-])((?:{FIRST_PARTS})/[\w./-]*)")
DOTTED = re.compile(r"(?<![\w.])(txsql(?:\.\w+)+)")
BARE_MODULE = re.compile(r"`(\w+\.py)`")


def referenced_paths(text: str) -> list[str]:
    """Every repository path the text names, as written (without a trailing dot)."""
    found = []
    for m in PATH.finditer(text):
        name = m.group(1).rstrip(".")
        if text[m.end() : m.end() + 1] == "<":  # a placeholder: check its folder
            name = name[: name.rfind("/") + 1]
        found.append(name)
    found += [m.group(1) for m in ROOT_FILES.finditer(text)]
    return sorted(set(found))


def bare_modules(text: str) -> list[str]:
    """Module files named without a folder (``ddl.py``): some file must have that name."""
    return sorted({m.group(1) for m in BARE_MODULE.finditer(text)})


def module_file_exists(name: str) -> bool:
    return any(any((ROOT / top).rglob(name)) for top in ("txsql", "tests", "benchmarks"))


def resolve_path(name: str) -> Path:
    """Where ``name`` points: from the root, or inside the package for ``log/...`` forms."""
    first = name.split("/", 1)[0]
    if first in TOP_FOLDERS or "/" not in name:
        return ROOT / name
    return PACKAGE / name


def dotted_names(text: str) -> list[str]:
    return sorted({m.group(1) for m in DOTTED.finditer(text)})


def _top_level_names(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _spelled_in_package(literal: str) -> bool:
    quoted = (f'"{literal}"', f"'{literal}'")
    return any(q in p.read_text() for p in PACKAGE.rglob("*.py") for q in quoted)


def dotted_problem(name: str) -> str | None:
    """Why ``name`` does not resolve (None when it does)."""
    parts = name.split(".")
    module: Path | None = None
    used = 0
    for i in range(1, len(parts) + 1):
        base = ROOT.joinpath(*parts[:i])
        if (base / "__init__.py").exists():
            module, used = base / "__init__.py", i
        elif base.with_suffix(".py").exists():
            module, used = base.with_suffix(".py"), i
            break
        else:
            break
    rest = parts[used:]
    if module is None or used == 1:
        return None if _spelled_in_package(name) else "no such module or configuration key"
    if not rest:
        return None
    if rest[0] in _top_level_names(module):
        return None
    if _spelled_in_package(name):
        return None
    return f"{'.'.join(parts[:used])} defines no top-level {rest[0]!r}"


def test_the_document_exists_and_names_paths() -> None:
    text = DOCUMENT.read_text()
    assert referenced_paths(text), "ARCHITECTURE.md names no path: the check is not reading it"
    assert dotted_names(text), "ARCHITECTURE.md names no dotted module"


def test_every_named_path_exists() -> None:
    text = DOCUMENT.read_text()
    missing = [name for name in referenced_paths(text) if not resolve_path(name).exists()]
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_module_named_without_a_folder_exists() -> None:
    text = DOCUMENT.read_text()
    missing = [name for name in bare_modules(text) if not module_file_exists(name)]
    assert not missing, f"ARCHITECTURE.md names module files that do not exist: {missing}"


def test_every_dotted_txsql_name_resolves() -> None:
    text = DOCUMENT.read_text()
    problems = {n: p for n in dotted_names(text) if (p := dotted_problem(n)) is not None}
    assert not problems, f"ARCHITECTURE.md names txsql modules that do not exist: {problems}"


def test_the_layer_rules_are_the_ones_test_layers_checks() -> None:
    # tests/test_layers.py is the source of truth; the document states the same order.
    from tests.test_layers import FORBIDDEN_BELOW_ENGINE, LOWER_LAYERS, ORDER

    text = " ".join(DOCUMENT.read_text().split())
    assert "the order " + ", ".join(ORDER) + ":" in text
    lower = ", ".join(f"`txsql/{layer}`" for layer in LOWER_LAYERS[:-1])
    assert f"{lower} and `txsql/{LOWER_LAYERS[-1]}` never import" in text
    assert ", ".join(FORBIDDEN_BELOW_ENGINE[:-1]).lower() in text.lower()


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("see `txsql/txn/no_such_module.py`", True),
        ("see `planner/operations/no_such_folder/`", True),
        ("see `txsql/txn/commit/loop.py` and `planner/operations/merge/`", False),
        ("placeholders: `tests/<subpackage>/test_<module>.py`", False),
        ("builders in `ddl.py` and `commands.py`", False),
        ("builders in `no_such_builder.py`", True),
    ],
)
def test_the_path_check_catches_a_missing_path(text: str, bad: bool) -> None:
    missing = [n for n in referenced_paths(text) if not resolve_path(n).exists()]
    missing += [n for n in bare_modules(text) if not module_file_exists(n)]
    assert bool(missing) is bad


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("txsql.txn.no_such_module", True),
        ("txsql.planner.registry.NO_SUCH_NAME", True),
        ("txsql.noSuchSetting", True),
        ("txsql.planner.registry.STATEMENTS", False),
        ("txsql.planner.sql", False),
        ("txsql.rowLevelConcurrency", False),
    ],
)
def test_the_dotted_check_catches_a_missing_module(name: str, bad: bool) -> None:
    assert (dotted_problem(name) is not None) is bad
