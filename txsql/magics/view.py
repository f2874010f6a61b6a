"""The objects a magic returns: rich HTML for notebooks, plain text everywhere else.

Each carries what was already fetched, so showing it again (``_txsql`` in a later cell,
``Out[n]``, nbconvert) never re-runs Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from txsql.magics import render
from txsql.magics.history import commits_from_rows, timeline_svg, timeline_text
from txsql.magics.readable import caption, readable_table
from txsql.magics.render import CommitDetails, Fetched
from txsql.result import Result


class TxResult:
    """The outcome of one ``%%txsql`` cell: every statement's Result, the last one shown.

    Attribute access falls through to the last :class:`~txsql.result.Result`, so
    ``r.version``, ``r.operation``, ``r.metrics`` and ``r.df`` work as on a Result.

    Attributes:
        results: one Result per statement, in order.
        fetched: the displayed rows of the last result (None when it returned no rows or
            display was off).
        elapsed_ms: wall time of the whole cell, fetch included.
    """

    def __init__(
        self,
        results: Sequence[Result],
        *,
        fetched: Fetched | None = None,
        details: CommitDetails | None = None,
        feedback: int = 1,
        elapsed_ms: float | None = None,
        badge: str | None = None,
        show_rows: bool = True,
        all_columns: bool = False,
    ) -> None:
        if not results:
            raise ValueError("a TxResult needs at least one Result")
        self.results = list(results)
        self.fetched = fetched
        self.details = details
        self.feedback = feedback
        self.elapsed_ms = elapsed_ms
        self.badge = badge
        self.show_rows = show_rows
        self.all_columns = all_columns  # False: OPTIMIZE/VACUUM/HISTORY shown compact

    @property
    def result(self) -> Result:
        """The last statement's Result."""
        return self.results[-1]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result, name)

    def to_pandas(self) -> Any:
        """All rows of the last result as pandas (runs Spark; not limited to the display)."""
        return self.result.to_pandas()

    # --- pieces ------------------------------------------------------------------------

    def _table(self) -> tuple[Sequence[render.Column], Sequence[Sequence[Any]]] | None:
        if not self.show_rows:
            return None
        if self.fetched is not None:
            readable = readable_table(self.result, self.fetched, all_columns=self.all_columns)
            if readable is not None:
                return readable
            return self.fetched.columns, self.fetched.rows
        if render.is_commit(self.result) and self.result.metrics:
            return render.metrics_table(self.result)
        return None

    def _read_label(self) -> str | None:
        last = self.result
        if last.df is None or last.table is None or last.version is None:
            return None
        label = f"{last.table}@v{last.version}"
        when = render.commit_time(self.details.timestamp_ms if self.details else None)
        return f"{label} (committed {when})" if when else label

    def _footer(self) -> str | None:
        if self.fetched is None or not self.show_rows:
            return None
        elapsed = self.elapsed_ms if self.feedback >= 1 else None
        read = self._read_label() if self.feedback >= 1 else None
        return render.rows_footer(self.fetched, read, elapsed)

    def _history_commits(self) -> list[Any]:
        if self.fetched is None or self.result.operation != "DESCRIBE HISTORY":
            return []
        names = [c.name for c in self.fetched.columns]
        if "version" not in names:
            return []
        return commits_from_rows([dict(zip(names, row)) for row in self.fetched.rows])

    def _show_banner(self) -> bool:
        return self.feedback >= 1 and self.result.df is None

    # --- renderings --------------------------------------------------------------------

    def _repr_html_(self) -> str:
        parts = []
        if self.badge:
            parts.append(render.badge_html(self.badge))
        if self.feedback >= 1 and len(self.results) > 1:
            parts.append(render.log_html(self.results))
        if self._show_banner():
            parts.append(render.banner_html(self.result, self.details))
            if self.feedback >= 2 and self.result.operation_metrics:
                parts.append(render.footer_html(render.metrics_text(self.result)))
        commits = self._history_commits()
        if commits:
            parts.append(timeline_svg(commits))
        table = self._table()
        above = caption(self.result) if table is not None else None
        if above:
            parts.append(render.footer_html(above))
        if table is not None:
            parts.append(render.html_table(*table))
        footer = self._footer()
        if footer:
            parts.append(render.footer_html(footer))
        return f'<div class="txsql-result">{"".join(parts)}</div>'

    def __repr__(self) -> str:
        lines = []
        if self.badge:
            lines.append(f"[{self.badge}]")
        if self.feedback >= 1 and len(self.results) > 1:
            lines.extend(render.log_entry(i, r) for i, r in enumerate(self.results, 1))
        if self._show_banner():
            lines.append(render.banner_text(self.result, self.details))
            if self.feedback >= 2 and self.result.operation_metrics:
                lines.append(render.metrics_text(self.result))
        commits = self._history_commits()
        if commits:
            lines.append(timeline_text(commits))
        table = self._table()
        above = caption(self.result) if table is not None else None
        if above:
            lines.append(above)
        if table is not None:
            lines.append(render.text_table(*table))
        footer = self._footer()
        if footer:
            lines.append(footer)
        return "\n".join(lines) if lines else f"<TxResult {self.result.operation}>"


class TextView:
    """Preformatted text (``--render``, ``--explain``, status, help) for any front end."""

    def __init__(self, text: str, *, badge: str | None = None) -> None:
        self.text = text
        self.badge = badge

    def _repr_html_(self) -> str:
        badge = render.badge_html(self.badge) if self.badge else ""
        return f"{badge}{render.pre_html(self.text)}"

    def __repr__(self) -> str:
        return (f"[{self.badge}]\n" if self.badge else "") + self.text
