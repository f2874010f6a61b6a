"""Where the SQL of a magic came from, to turn script positions into cell positions.

The session reports positions in the SQL it was given (line 1 = first SQL line). A user
looks at the cell, where the ``%%txsql`` line comes first, or at a ``-f`` file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Origin = Literal["cell", "line", "file"]


@dataclass(frozen=True, slots=True)
class SqlSource:
    """The SQL text of one magic call and where it lives.

    Attributes:
        text: the SQL exactly as sent to the session.
        origin: ``cell`` (a ``%%txsql`` body), ``line`` (a ``%txsql`` line) or ``file``.
        name: the file name for ``-f``.
    """

    text: str
    origin: Origin = "cell"
    name: str = ""

    def user_line(self, line: int) -> int:
        """The line the user sees for SQL line ``line`` (cell bodies start on line 2).

        >>> SqlSource("SELECT 1").user_line(1)
        2
        """
        return line + 1 if self.origin == "cell" else line

    def where(self, line: int | None, column: int | None) -> str:
        """Describe a SQL position in the user's terms.

        >>> SqlSource("a\\nb").where(2, 3)
        'cell line 3, column 3'
        >>> SqlSource("x", origin="file", name="q.sql").where(1, 1)
        'q.sql line 1, column 1'
        """
        if line is None:
            return ""
        col = f", column {column}" if column is not None else ""
        if self.origin == "line":
            return f"column {column}" if column is not None else "the %txsql line"
        if self.origin == "file":
            return f"{self.name} line {line}{col}"
        return f"cell line {self.user_line(line)}{col}"

    def excerpt(self, line: int | None, column: int | None) -> list[str]:
        """The SQL line at ``line`` with a caret under ``column``, numbered as the user sees it.

        >>> SqlSource("SELECT 1;\\nSELEC 2").excerpt(2, 1)
        ['  3 | SELEC 2', '    | ^^^^^']
        """
        lines = self.text.splitlines()
        if line is None or not 1 <= line <= len(lines):
            return []
        number = "" if self.origin == "line" else str(self.user_line(line))
        gutter = f"  {number:>{len(number)}} | "
        blank = " " * (len(gutter) - 2) + "| "
        out = [gutter + lines[line - 1]]
        if column is not None and column >= 1:
            text = lines[line - 1]
            # keep tabs so the caret lines up under the same character in the browser
            pad = "".join("\t" if ch == "\t" else " " for ch in text[: column - 1])
            out.append(blank + pad + "^" * _token_width(text, column - 1))
        return out


def _token_width(text: str, start: int) -> int:
    """How many characters the caret underlines: the word or quoted name at ``start``.

    >>> _token_width("SELECT `a b`, x", 7), _token_width("a + b", 2), _token_width("", 0)
    (5, 1, 1)
    """
    if start >= len(text):
        return 1
    if text[start] in "`'\"":
        end = text.find(text[start], start + 1)
        return end - start + 1 if end > start else 1
    end = start
    while end < len(text) and (text[end].isalnum() or text[end] in "_$"):
        end += 1
    return max(end - start, 1)
