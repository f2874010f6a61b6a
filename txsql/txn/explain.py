"""Raising conflict errors with the details users need: what, where, and how to avoid it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from pyroaring import BitMap64

from txsql.errors import CommitConflictError
from txsql.txn.isolation import IsolationLevel
from txsql.txn.winner import WinningCommit

_MAX_LISTED = 5  # files/rows named in a message; the attributes carry all of them


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
        )
