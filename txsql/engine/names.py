"""Names of txsql's helper columns, chosen per statement so they never clash with data.

Scans, DML and MERGE add helper columns (file keys, row indexes, SET values, actions) next
to the table's and the source's own columns. Spark resolves names case-insensitively and
refuses ambiguous ones, so a user column called ``_file`` or ``_txsql_fk`` would either
break a statement or, worse, be silently overwritten by the helper. Every helper name is
therefore derived from a readable base and made unique against the names in play.
"""

from __future__ import annotations

from collections.abc import Iterable


def fresh_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base_1``, ``base_2``... : the first not in ``taken`` (any case).

    >>> fresh_name("_file", ["id", "_FILE", "_file_1"])
    '_file_2'
    >>> fresh_name("_row_index", ["id"])
    '_row_index'
    """
    lowered = {name.lower() for name in taken}
    candidate = base
    suffix = 0
    while candidate.lower() in lowered:
        suffix += 1
        candidate = f"{base}_{suffix}"
    return candidate


def fresh_names(bases: Iterable[str], taken: Iterable[str]) -> list[str]:
    """Fresh names for several helpers at once, distinct from ``taken`` and each other.

    >>> fresh_names(["_k", "_k"], ["_k"])
    ['_k_1', '_k_2']
    """
    used = list(taken)
    out: list[str] = []
    for base in bases:
        name = fresh_name(base, used)
        used.append(name)
        out.append(name)
    return out
