"""No import cycles among txsql's and the benchmarks' modules, counting every import.

The graph is built from the source (AST), so an import hidden inside a function or under
``if TYPE_CHECKING:`` to dodge a cycle at load time still counts: such an import is a
cycle in the design, not a fix.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"


def _module_name(path: Path) -> str:
    # The benchmarks are scripts that import each other by bare name (``import commit_groups``).
    base = BENCHMARKS if path.is_relative_to(BENCHMARKS) else REPO
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The txsql modules ``path`` imports (``from pkg import mod`` resolves to ``pkg.mod``)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    this = _module_name(path)
    # Importing a package runs its __init__, which is what a name resolves to here.
    return {name for name in found if name in modules and name != this}


def import_graph() -> dict[str, set[str]]:
    paths = sorted([*(REPO / "txsql").rglob("*.py"), *BENCHMARKS.rglob("*.py")])
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imported_modules(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None (iterative DFS, white/grey/black)."""
    state: dict[str, int] = {}
    for root in sorted(graph):
        if state.get(root):
            continue
        stack: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        path = [root]
        state[root] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            nxt = todo.pop()
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(graph.get(nxt, ()))))
    return None


def test_find_cycle_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert "txsql.planner.registry" in graph  # the walk sees the package
    assert "commit_groups" in graph  # and the benchmarks
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
