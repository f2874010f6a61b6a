"""Names and column definitions shared by the statement dataclasses."""

from __future__ import annotations

from dataclasses import dataclass

ColumnPath = tuple[str, ...]
"""A column as a SET clause names it: its name parts, unquoted (``s.a`` is ``("s", "a")``,
`` `dot.col` `` is ``("dot.col",)``); the first part may be the table's name or alias."""


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table named in SQL: a warehouse name, or a path (``delta.`/path```)."""

    name: str | None = None
    path: str | None = None
    version: int | None = None
    timestamp: str | None = None

    @property
    def display(self) -> str:
        return self.name if self.name is not None else f"delta.`{self.path}`"


@dataclass(frozen=True, slots=True)
class IdentitySpec:
    """``GENERATED ALWAYS|BY DEFAULT AS IDENTITY (START WITH start INCREMENT BY step)``."""

    start: int = 1
    step: int = 1
    always: bool = True


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    type_sql: str
    nullable: bool = True
    comment: str | None = None
    generated: str | None = None  # GENERATED ALWAYS AS (expr): Spark SQL text
    default: str | None = None  # DEFAULT expr: Spark SQL text
    identity: IdentitySpec | None = None
    collation: str | None = None  # STRING COLLATE <name>

    def typed_null(self) -> str:
        """A NULL of this column's type as Spark SQL: Spark then spells the type's JSON."""
        cast = f"CAST(NULL AS {self.type_sql})"
        # CAST takes no COLLATE in its type; the COLLATE expression sets it.
        return f"{cast} COLLATE {self.collation}" if self.collation else cast
