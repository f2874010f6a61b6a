"""CHAR(n) / VARCHAR(n) columns: stored as Delta stores them, enforced on every write.

Delta (like Spark) keeps such a column as type ``string`` in the schema JSON and records
the declared type in the field metadata: ``{"__CHAR_VARCHAR_TYPE_STRING": "varchar(3)"}``.
Other readers (DuckDB, delta-rs) just see a string column. Every write checks the length
with Spark's rule (``CharVarcharCodegenUtils``): a value may be longer than ``n`` only by
trailing spaces, which are cut; anything else fails the statement before a file is
committed. CHAR(n) values are also right-padded with spaces to ``n`` on write, as Spark
did before read-side padding: readers of the files then see padded values.

CREATE TABLE / ADD COLUMNS accept VARCHAR(n) only at the top level; CHAR(n) and char types
nested in arrays, maps or structs are refused by name (reads would need padding and nested
checks txsql does not do), never stored as a plain unchecked string.

The check runs inside the write job (``raise_error``): one pass over the rows, no extra
job. Spark reports the failure as an exception whose text carries :data:`_MARKER`;
:func:`length_error` turns it back into a typed :class:`CharVarcharLengthError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from txsql.errors import CharVarcharLengthError, UnsupportedStatementError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TYPE_KEY = "__CHAR_VARCHAR_TYPE_STRING"
_TYPE = re.compile(r"^\s*(char|varchar)\s*\(\s*(\d+)\s*\)\s*$", re.IGNORECASE)
_ANY_CHAR = re.compile(r"\b(var)?char\s*\(", re.IGNORECASE)
# Printable ASCII separators: Spark Connect may escape control characters in messages.
_MARKER = "TXSQL_CHAR_VARCHAR_LENGTH|~|"
_SEP = "|~|"
_SHOWN_VALUE_CHARS = 80


@dataclass(frozen=True, slots=True)
class LengthLimit:
    """A top-level CHAR/VARCHAR column: its name, ``char``/``varchar`` and ``n``."""

    column: str
    kind: str
    length: int

    @property
    def type_string(self) -> str:
        return f"{self.kind}({self.length})"


def length_metadata(column: str, type_sql: str) -> dict[str, str]:
    """Field metadata for a declared column type (empty unless it is VARCHAR(n)).

    >>> length_metadata("c", "VARCHAR(3)")
    {'__CHAR_VARCHAR_TYPE_STRING': 'varchar(3)'}
    >>> length_metadata("c", "STRING")
    {}

    Raises:
        UnsupportedStatementError: CHAR(n), or a char type nested in a complex type.
    """
    match = _TYPE.match(type_sql)
    if match is None:
        if _ANY_CHAR.search(type_sql):
            raise UnsupportedStatementError(
                f"column {column}: {type_sql} nests a CHAR/VARCHAR type, which txsql does "
                "not enforce",
                hint="Use STRING inside ARRAY/MAP/STRUCT types.",
            )
        return {}
    kind, length = match.group(1).lower(), int(match.group(2))
    if kind == "char":
        raise UnsupportedStatementError(
            f"column {column}: CHAR({length}) is not supported (txsql cannot pad CHAR values "
            "on read as Spark does)",
            hint=f"Use VARCHAR({length}) (length checked on every write) or STRING.",
        )
    if length < 1:
        raise UnsupportedStatementError(
            f"column {column}: VARCHAR({length}) needs a length of at least 1",
            hint="e.g. VARCHAR(10)",
        )
    return {TYPE_KEY: f"varchar({length})"}


def length_limits(schema_json: Mapping[str, Any]) -> list[LengthLimit]:
    """The top-level CHAR/VARCHAR columns of a schema (from the field metadata)."""
    limits = []
    for field in schema_json.get("fields", []):
        declared = (field.get("metadata") or {}).get(TYPE_KEY)
        if not isinstance(declared, str):
            continue
        match = _TYPE.match(declared)
        if match is None or field.get("type") != "string":
            continue  # nested char types: Spark checks them; txsql never creates them
        limits.append(LengthLimit(field["name"], match.group(1).lower(), int(match.group(2))))
    return limits


def enforce_lengths(
    df: DataFrame, schema_json: Mapping[str, Any], physical: Mapping[str, str]
) -> DataFrame:
    """``df`` with every CHAR/VARCHAR column checked (and CHAR padded) as rows are written.

    Args:
        df: The rows as written to Parquet (physical column names, values cast to string).
        schema_json: The table schema (logical names, with the char/varchar metadata).
        physical: Logical -> physical column name.
    """
    limits = length_limits(schema_json)
    if not limits:
        return df
    replaced = {}
    for limit in limits:
        name = physical.get(limit.column, limit.column)
        if name not in df.columns:
            continue
        value = F.col(f"`{name.replace('`', '``')}`")
        n = limit.length
        message = F.concat(
            F.lit(f"{_MARKER}{limit.column}{_SEP}{limit.type_string}{_SEP}"),
            F.length(value).cast("string"),
            F.lit(_SEP),
            F.substring(value, 1, _SHOWN_VALUE_CHARS),
            F.lit(_SEP),
        )
        # Spark's rule: only trailing spaces may run past n, and they are cut off.
        checked = (
            F.when(value.isNull(), value)
            .when(F.length(value) <= n, value)
            .when(F.length(F.rtrim(value)) <= n, F.substring(value, 1, n))
            .otherwise(F.raise_error(message).cast("string"))
        )
        if limit.kind == "char":
            checked = F.when(checked.isNull(), checked).otherwise(F.rpad(checked, n, " "))
        replaced[name] = checked
    return df.withColumns(replaced)


def length_error(exc: BaseException) -> CharVarcharLengthError | None:
    """The typed error for a Spark failure raised by :func:`enforce_lengths`, if it is one."""
    text = str(exc)
    start = text.find(_MARKER)
    if start < 0:
        return None
    rest = text[start + len(_MARKER) :]
    parts = rest.split(_SEP, 3)
    if len(parts) < 4:
        return None
    column, type_string, length, tail = parts
    end = tail.rfind(_SEP)
    shown = tail[:end] if end >= 0 else tail
    suffix = "..." if length.isdigit() and int(length) > len(shown) else ""
    return CharVarcharLengthError(
        f"value {shown!r}{suffix} ({length} characters) is too long for column {column} "
        f"{type_string.upper()}; the statement wrote nothing"
    )
