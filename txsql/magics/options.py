"""Parse the options on a ``%%txsql`` / ``%txsql`` magic line.

Options live on the magic line only; the cell body is always pure SQL and is never scanned
for flags (a SQL comment that looks like a flag must not change behaviour). For the line
magic, option parsing stops at the first word that is not a flag and the rest of the line
is the statement (or a subcommand such as ``history t``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Literal

from txsql.magics.errors import MagicUsageError

Limit = int | Literal["all"]


@dataclass(frozen=True, slots=True)
class Flag:
    """One option of the magic line."""

    long: str
    short: str | None
    dest: str
    metavar: str | None
    help: str

    @property
    def takes_value(self) -> bool:
        return self.metavar is not None


FLAGS: tuple[Flag, ...] = (
    Flag("--session", None, "session", "NAME", "run in the named transaction session NAME"),
    Flag("--out", "-o", "out", "VAR", "also store the result in the notebook variable VAR"),
    Flag("--limit", "-l", "limit", "N", "show at most N rows; 'all' for no cap, 0 for no display"),
    Flag(
        "--explain",
        None,
        "explain",
        None,
        "show the plan (Spark's for queries, txsql's for DML) instead of running",
    ),
    Flag("--render", None, "render", None, "show the final SQL with bound parameters; run nothing"),
    Flag("--file", "-f", "file", "FILE", "read the SQL from FILE"),
    Flag("--spark", None, "spark", "VAR", "use the SparkSession held in notebook variable VAR"),
    Flag("--warehouse", None, "warehouse", "PATH", "resolve table names under PATH"),
    Flag("--retries", None, "retries", "N", "retry a lost commit race at most N times"),
    Flag("--quiet", "-q", "quiet", None, "no commit banner, log or progress; rows only"),
    Flag(
        "--all-columns",
        None,
        "all_columns",
        None,
        "show results as Delta returns them (all 15 DESCRIBE HISTORY columns, OPTIMIZE's "
        "metrics struct) instead of the compact summary",
    ),
    Flag("--help", "-h", "help", None, "show this help"),
)


@dataclass(slots=True)
class MagicOptions:
    """The parsed magic line; ``rest`` is the text after the options (line magic only)."""

    session: str | None = None
    out: str | None = None
    limit: Limit | None = None
    explain: bool = False
    render: bool = False
    file: str | None = None
    spark: str | None = None
    warehouse: str | None = None
    retries: int | None = None
    quiet: bool = False
    all_columns: bool = False
    help: bool = False
    rest: str = ""
    rest_offset: int = 0
    given: list[str] = field(default_factory=list)


def parse_line(line: str, *, cell: bool) -> MagicOptions:
    """Parse the magic ``line``.

    Args:
        line: the text after ``%txsql`` / ``%%txsql``.
        cell: True for the cell magic, whose line may hold options only.

    Returns:
        The options, with ``rest`` holding the statement of a line magic.

    Raises:
        MagicUsageError: an unknown flag (with a close-match suggestion), a missing or
            invalid value, or SQL on a cell magic's line.

    >>> o = parse_line("-l 5 -o r SELECT '-x'", cell=False)
    >>> (o.limit, o.out, o.rest)
    (5, 'r', "SELECT '-x'")
    """
    options = MagicOptions()
    position = 0
    while True:
        position = _skip_spaces(line, position)
        if position >= len(line) or line[position] != "-":
            break
        word_end = _word_end(line, position)
        word = line[position:word_end]
        if word == "--":
            position = _skip_spaces(line, word_end)
            break
        name, _, inline_value = word.partition("=")
        flag = _lookup(name)
        position = word_end
        if flag.takes_value:
            if inline_value:
                value = inline_value
            else:
                value, position = _read_value(line, position, flag)
            setattr(options, flag.dest, _convert(flag, value))
        else:
            if inline_value:
                raise MagicUsageError(f"option {flag.long} takes no value", hint=usage())
            setattr(options, flag.dest, True)
        options.given.append(flag.dest)
    options.rest = line[position:].strip()
    options.rest_offset = position
    if cell and options.rest:
        raise MagicUsageError(
            f"the %%txsql line takes options only, found {options.rest[:40]!r}",
            hint="Put the SQL in the cell body, below the %%txsql line.",
        )
    return options


def usage() -> str:
    """One line listing every option."""
    parts = []
    for flag in FLAGS:
        name = f"{flag.short}/{flag.long}" if flag.short else flag.long
        parts.append(f"{name} {flag.metavar}" if flag.metavar else name)
    return "Options: " + ", ".join(parts) + "."


def help_text() -> str:
    """The option table shown by ``%txsql --help``."""
    lines = ["Options (on the magic line only; the cell body is pure SQL):"]
    for flag in FLAGS:
        name = f"{flag.short}, {flag.long}" if flag.short else f"    {flag.long}"
        if flag.metavar:
            name += f" {flag.metavar}"
        lines.append(f"  {name:<22} {flag.help}")
    return "\n".join(lines)


def _lookup(name: str) -> Flag:
    for flag in FLAGS:
        if name in (flag.long, flag.short):
            return flag
    known = [f.long for f in FLAGS] + [f.short for f in FLAGS if f.short]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    if not close and name.startswith("-") and not name.startswith("--"):
        # `-limit` is a common slip for `--limit`
        close = difflib.get_close_matches("-" + name, known, n=1, cutoff=0.6)
    suggestion = f"; did you mean {close[0]}?" if close else ""
    raise MagicUsageError(f"unknown option {name}{suggestion}", hint=usage())


def _read_value(line: str, position: int, flag: Flag) -> tuple[str, int]:
    start = _skip_spaces(line, position)
    if start >= len(line):
        raise MagicUsageError(f"option {flag.long} needs a value {flag.metavar}", hint=usage())
    quote = line[start]
    if quote in "'\"":
        end = line.find(quote, start + 1)
        if end < 0:
            raise MagicUsageError(f"unclosed quote in the value of {flag.long}", hint=usage())
        return line[start + 1 : end], end + 1
    end = _word_end(line, start)
    return line[start:end], end


def _convert(flag: Flag, value: str) -> object:
    if flag.dest == "limit":
        if value.lower() == "all":
            return "all"
        return _non_negative(flag, value)
    if flag.dest == "retries":
        return _non_negative(flag, value)
    if flag.dest in ("out", "spark") and not value.isidentifier():
        raise MagicUsageError(
            f"{flag.long} needs a Python variable name, not {value!r}", hint=usage()
        )
    return value


def _non_negative(flag: Flag, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        extra = " or 'all'" if flag.dest == "limit" else ""
        raise MagicUsageError(
            f"{flag.long} takes a whole number >= 0{extra}, not {value!r}", hint=usage()
        )
    return number


def _skip_spaces(line: str, position: int) -> int:
    while position < len(line) and line[position].isspace():
        position += 1
    return position


def _word_end(line: str, position: int) -> int:
    while position < len(line) and not line[position].isspace():
        position += 1
    return position
