"""Tab completion of table and column names inside ``%%txsql`` cells and ``%txsql`` lines.

An IPython Matcher (API v2) needs no front-end extension, so it works in JupyterLab, VS
Code and terminal IPython alike. It reads only the Delta log (never starts Spark): table
names from the warehouse, column names from the schema of the tables the cell mentions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from IPython.core.completer import SimpleCompletion, context_matcher

from txsql.planner.catalog import Catalog
from txsql.planner.sql.refs import TableRef

_TABLE_CONTEXT = re.compile(
    r"\b(FROM|JOIN|INTO|UPDATE|TABLE|USING|HISTORY|DETAIL|RESTORE|OPTIMIZE|VACUUM|history|diff)"
    r"\s+[\w.]*$",
    re.IGNORECASE,
)
_TABLE_NAMES = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|USING)\s+([A-Za-z_]\w*)", re.IGNORECASE
)


def candidates(text_before: str, full_text: str, catalog: Catalog) -> list[str]:
    """Names that may follow ``text_before`` (the cell up to the cursor).

    After FROM/JOIN/INTO/UPDATE/TABLE/USING: table names; elsewhere: columns of the tables
    the cell names.
    """
    if _TABLE_CONTEXT.search(text_before):
        return catalog.names()
    columns: list[str] = []
    for name in dict.fromkeys(_TABLE_NAMES.findall(full_text)):
        for column in _columns(catalog, name):
            if column not in columns:
                columns.append(column)
    return columns


def _columns(catalog: Catalog, name: str) -> Iterable[str]:
    try:
        log = catalog.log(TableRef(name=name))
        if not log.exists():
            return []
        fields = log.snapshot().schema_json["fields"]
    except Exception:
        return []  # a name that is not a txsql table (a view, a DataFrame variable)
    return [str(f["name"]) for f in fields]


def register_completer(ipython: Any, magics: Any) -> None:
    """Add the txsql matcher to ``ipython``'s completer (no-op without one)."""
    completer = getattr(ipython, "Completer", None)
    if completer is None or not hasattr(completer, "custom_matchers"):
        return

    @context_matcher()
    def txsql_matcher(context: Any) -> dict[str, Any]:
        full = context.full_text
        if not full.lstrip().startswith(("%%txsql", "%txsql")):
            return {"completions": []}
        lines = full.split("\n")
        before = "\n".join([*lines[: context.cursor_line], context.text_until_cursor])
        token = re.split(r"[^\w]", context.token)[-1]
        catalog = _catalog(magics)
        names = [n for n in candidates(before, full, catalog) if n.startswith(token)]
        return {
            "completions": [SimpleCompletion(n, type="txsql") for n in names],
            "matched_fragment": token,
            "suppress": bool(names),
        }

    completer.custom_matchers.append(txsql_matcher)


def _catalog(magics: Any) -> Catalog:
    sessions = getattr(magics, "_sessions", {})
    if sessions:
        return next(iter(sessions.values())).catalog
    # Deferred: txsql.session loads pyspark, which %load_ext must not wait for.
    from txsql.session import DEFAULT_WAREHOUSE

    return Catalog(getattr(magics, "warehouse", None) or DEFAULT_WAREHOUSE)
