"""The two roots of txsql's exception tree: :class:`TxSqlError` and :class:`TxSqlWarning`.

Every error derives from :class:`TxSqlError` and carries a ``hint`` telling the user how to
fix or avoid it; every warning derives from :class:`TxSqlWarning`. The warnings live here
too: they are few, and like the base they depend on nothing else in the tree.
"""

from __future__ import annotations


class TxSqlError(Exception):
    """Base class for every error raised by txsql.

    ``statement``, ``line`` and ``column`` (1-based, in the cell or script) are filled in
    by the session for errors raised while running a statement.
    """

    default_hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        if not hasattr(self, "line"):
            self.statement: str = ""
            self.line: int | None = None
            self.column: int | None = None
        super().__init__(self._render())

    def locate(self, statement: str, line: int, column: int) -> None:
        """Attach the statement's position in the cell if nothing more precise is known."""
        if self.line is None:
            self.statement, self.line, self.column = statement, line, column
            self.args = (self._render(),)

    def _render(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        text = self.message + where
        return f"{text}\nHow to fix: {self.hint}" if self.hint else text


# --- warnings -------------------------------------------------------------------------


class TxSqlWarning(UserWarning):
    """Base class of txsql warnings (filter them with ``warnings.simplefilter``)."""


class CheckpointFallbackWarning(TxSqlWarning):
    """A checkpoint could not be used; the table was rebuilt from an older one or from commits."""


class ChecksumUnreadableWarning(TxSqlWarning):
    """A ``.crc`` checksum file could not be parsed, so that version was not verified."""
