"""Raising conflict errors with the details users need: what, where, and how to avoid it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from pyroaring import BitMap64

from txsql.errors import CommitConflictError
from txsql.log.actions import AddFile
from txsql.log.predicates import Predicate, referenced_columns
from txsql.log.schema import StructType
from txsql.txn.hooks import RowValueReader
from txsql.txn.isolation import IsolationLevel
from txsql.txn.winner import WinningCommit

logger = logging.getLogger(__name__)

_MAX_LISTED = 5  # files/rows named in a message; the attributes carry all of them
_MAX_VALUE_ROWS = 20  # colliding rows whose values are read for the card
_MAX_KEY_COLUMNS = 4


def partition_label(values: Mapping[str, str | None] | None) -> str:
    """Hive-style label of a partition, as Delta prints it in conflict hints.

    >>> partition_label({"p": "1", "q": None}), partition_label({})
    ('p=1/q=__HIVE_DEFAULT_PARTITION__', '')
    """
    if not values:
        return ""
    return "/".join(
        f"{k}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for k, v in values.items()
    )


def partition_labels(values: Iterable[Mapping[str, str | None] | None]) -> tuple[str, ...]:
    """Distinct non-empty partition labels, sorted."""
    return tuple(sorted({label for v in values if (label := partition_label(v))}))


def partition_predicate_example(values: Mapping[str, str | None] | None) -> str:
    """A predicate pinning one partition, for hints.

    >>> partition_predicate_example({"p": "1", "d": "2024-01-01"})
    "p = 1 AND d = '2024-01-01'"
    """
    terms = []
    for k, v in (values or {}).items():
        if v is None:
            terms.append(f"{k} IS NULL")
        elif v.lstrip("-").isdigit():
            terms.append(f"{k} = {v}")
        else:
            terms.append(f"{k} = '{v}'")
    return " AND ".join(terms)


def rows_detail(rows: Mapping[str, BitMap64]) -> dict[str, tuple[int, ...]]:
    return {path: tuple(int(r) for r in bitmap) for path, bitmap in sorted(rows.items())}


def key_columns(schema: StructType, predicates: Iterable[Predicate]) -> list[str]:
    """Columns that identify rows for a reader: those our predicates use, then the first ones.

    >>> from txsql.log.schema import parse_schema
    >>> from txsql.log.predicates import Column, Comparison, Literal
    >>> s = parse_schema('{"type":"struct","fields":[' + ",".join(
    ...     '{"name":"%s","type":"long","nullable":true,"metadata":{}}' % n for n in "abcdef")
    ...     + "]}")
    >>> key_columns(s, [Comparison("=", Column("E"), Literal(1))])
    ['e', 'a', 'b', 'c']
    """
    used = set().union(*(referenced_columns(p) for p in predicates))
    first = [n for n in schema.names if n.lower() in used]
    rest = [n for n in schema.names if n.lower() not in used]
    return (first + rest)[:_MAX_KEY_COLUMNS]


def colliding_rows(
    reader: object,
    files: Mapping[str, AddFile],
    rows: Mapping[str, BitMap64],
    columns: Sequence[str],
) -> tuple[dict[str, Any], ...]:
    """The colliding rows as ``{"file", "row", key columns...}`` (values when cheap).

    The values are read through the hook (Spark) when it can; a failure to read them never
    hides the conflict, the rows are then named by position only.
    """
    listed: list[dict[str, Any]] = []
    for path, bitmap in sorted(rows.items()):
        for r in bitmap:
            listed.append({"file": path, "row": int(r)})
            if len(listed) >= _MAX_VALUE_ROWS:
                break
    if not isinstance(reader, RowValueReader) or not columns:
        return tuple(listed)
    wanted = {
        path: (files[path], BitMap64(d["row"] for d in listed if d["file"] == path))
        for path in {d["file"] for d in listed}
        if path in files
    }
    try:
        values = reader.row_values(wanted, columns, _MAX_VALUE_ROWS)
    except Exception:  # values are a courtesy; the conflict stands without them
        logger.debug("reading colliding row values failed", exc_info=True)
        return tuple(listed)
    by_key = {(v.get("file"), v.get("row")): v for v in values}
    return tuple({**d, **by_key.get((d["file"], d["row"]), {})} for d in listed)


def sentence(tips: Sequence[str]) -> str:
    """Hints joined into one sentence."""
    text = "; ".join(tips)
    return text[:1].upper() + text[1:] + "."


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


@dataclass(frozen=True)
class Reporter:
    """Builds and raises the error for one (winner, isolation level) pair."""

    winner: WinningCommit
    isolation: IsolationLevel

    def fail(
        self,
        error: type[CommitConflictError],
        message: str,
        *,
        rule: str,
        hint: str,
        partitions: tuple[str, ...] = (),
        files: Sequence[str] = (),
        rows: Mapping[str, BitMap64] | None = None,
        row_details: Callable[[], tuple[dict[str, Any], ...]] | None = None,
    ) -> NoReturn:
        """Raise ``error`` for a conflict with the winner; the message names the overlap."""
        files = tuple(sorted(files))
        detail = []
        if partitions:
            detail.append(f"partition {_listed(list(partitions))}")
        if rows:
            detail.append(
                "rows "
                + "; ".join(
                    f"{path}: {_listed([str(r) for r in bitmap])}"
                    for path, bitmap in sorted(rows.items())
                )
            )
        elif files:
            detail.append(f"file {_listed(list(files))}")
        where = f" [{'; '.join(detail)}]" if detail else ""
        text = (
            f"{message}{where}. Conflicting commit: {self.winner.describe}; "
            f"checked as {self.isolation.value}; rule: {rule}"
        )
        raise error(
            text,
            winning_version=self.winner.version,
            winning_operation=self.winner.operation,
            isolation_level=self.isolation.value,
            rule=rule,
            partitions=partitions,
            files=files,
            rows=rows_detail(rows) if rows else None,
            hint=hint,
            row_details=row_details or (),
        )
