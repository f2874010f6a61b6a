"""The ``txsql`` sqlglot dialect: Databricks SQL plus the Delta statements it lacks.

sqlglot (as of 30.x) parses ``OPTIMIZE`` and ``VACUUM`` as opaque commands, fails on
``RESTORE``, ``REORG`` and ``DESCRIBE DETAIL`` and falls back to a command for
``ALTER TABLE ... UNSET TBLPROPERTIES``. The dialect adds them through sqlglot's own
extension points: a ``DETAIL`` describe style, an ``UNSET`` entry in ``ALTER_PARSERS`` and,
for the statements that start with a word sqlglot does not know, a ``_parse_statement``
override that dispatches on that word before the generic rules run. The statements' nodes,
parsers and SQL text live in :mod:`txsql.planner.sql.delta_nodes`.

The class name is unique on purpose: sqlglot registers dialects by lowercased class name,
so naming it ``Databricks`` would replace the built-in dialect process-wide.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.dialects.spark import Spark
from sqlglot.generators.databricks import DatabricksGenerator
from sqlglot.generators.spark import SparkGenerator
from sqlglot.parsers.databricks import DatabricksParser
from sqlglot.tokens import TokenType

from txsql.planner.sql.delta_nodes import (
    STATEMENT_PARSERS,
    CloneTable,
    MergeWithEvolution,
    Optimize,
    Reorg,
    ReplaceTable,
    Restore,
    UnsetTableProperties,
    Vacuum,
    clone_sql,
    optimize_sql,
    parse_unset,
    reorg_sql,
    time_travel_suffix,
    try_parse_clone,
    vacuum_sql,
)
from txsql.planner.sql.show import Show, parse_show, show_sql
from txsql.planner.sql.transactions import (
    DecidePreparedNode,
    PrepareNode,
    parse_prepared_statement,
    prepared_sql,
    starts_prepared_statement,
)

DIALECT = "txsql"
SPARK = "txsqlspark"  # the SQL txsql hands to Spark: see TxSqlSpark below


class TxSql(Databricks):
    """Databricks SQL as txsql reads it."""

    class Tokenizer(Databricks.Tokenizer):
        # sqlglot turns OPTIMIZE/VACUUM into command tokens that swallow the statement as
        # one string; as plain words the parser below can read their clauses.
        KEYWORDS: ClassVar[dict[str, TokenType]] = {
            **Databricks.Tokenizer.KEYWORDS,
            "OPTIMIZE": TokenType.VAR,
            "VACUUM": TokenType.VAR,
            # A command token would swallow PREPARE TRANSACTION 'id' as one string.
            "PREPARE": TokenType.VAR,
        }
        # SHOW is a command token that swallows the rest of the statement as one string;
        # without it, txsql.planner.sql.show parses the SHOW statements it runs.
        COMMANDS: ClassVar[set[TokenType]] = Databricks.Tokenizer.COMMANDS - {TokenType.SHOW}

    class Parser(DatabricksParser):
        DESCRIBE_STYLES: ClassVar[set[str]] = {*DatabricksParser.DESCRIBE_STYLES, "DETAIL"}
        ALTER_PARSERS: ClassVar[dict[str, Callable[[Any], Any]]] = {
            **DatabricksParser.ALTER_PARSERS,
            "UNSET": parse_unset,
        }

        def _parse_describe(self) -> exp.Describe:
            # DESCRIBE HISTORY t LIMIT n: the limit becomes the describe's "limit" arg.
            describe = super()._parse_describe()
            if describe.args.get("style") == "HISTORY" and self._match(TokenType.LIMIT):
                limit = self._parse_number()
                if limit is None:
                    self.raise_error("Expected DESCRIBE HISTORY t LIMIT <number>")
                describe.set("limit", limit)
            return describe

        def _parse_statement(self) -> exp.Expr | None:
            curr = self._curr
            if starts_prepared_statement(self):
                return parse_prepared_statement(self)
            if curr is not None and curr.token_type == TokenType.SHOW and self._next is not None:
                self._advance()
                return parse_show(self)
            if (
                curr is not None
                and curr.token_type == TokenType.VAR
                and curr.text.upper() in STATEMENT_PARSERS
                and self._next is not None
            ):
                self._advance()
                return STATEMENT_PARSERS[curr.text.upper()](self)
            if (
                curr is not None
                and curr.token_type == TokenType.MERGE
                and self._next is not None
                and self._next.token_type == TokenType.WITH
            ):
                self._advance()
                if not self._match_text_seq("WITH", "SCHEMA", "EVOLUTION"):
                    self.raise_error("Expected MERGE WITH SCHEMA EVOLUTION INTO ...")
                return MergeWithEvolution(this=self._parse_merge())
            if curr is not None and curr.token_type in (TokenType.CREATE, TokenType.REPLACE):
                clone = try_parse_clone(self)
                if clone is not None:
                    return clone
            if (
                curr is not None
                and curr.token_type == TokenType.REPLACE
                and self._next is not None
                and self._next.token_type == TokenType.TABLE
            ):
                # Delta's REPLACE TABLE: sqlglot's CREATE rule reads the rest (it takes a
                # REPLACE start token as OR REPLACE); the wrapper says the table must exist.
                self._advance()
                return ReplaceTable(this=self._parse_create())
            return super()._parse_statement()

        def _parse_table_parts(self, *args: Any, **kwargs: Any) -> exp.Table | exp.Dot | None:
            # ``t@v1`` right after a table name: Delta time travel (see time_travel_suffix).
            # sqlglot parses the version clause later (after the alias), and sets it even when
            # empty, so the suffix waits in ``_txsql_at`` for that table's _parse_version.
            self._txsql_at: exp.Version | None = None
            table = super()._parse_table_parts(*args, **kwargs)
            if isinstance(table, exp.Table) and self._match(TokenType.PARAMETER):
                version = time_travel_suffix(self)
                table.set("version", version)
                self._txsql_at = version
            return table

        def _parse_version(self) -> exp.Version | None:
            pending = getattr(self, "_txsql_at", None)
            self._txsql_at = None
            version = super()._parse_version()
            if pending is not None and version is not None:
                self.raise_error("use either t@v<N> or VERSION/TIMESTAMP AS OF, not both")
            return version if version is not None else pending

        def _parse_parameter(self) -> exp.Parameter:
            # Any other ``@name`` (e.g. ``SELECT a@b``) would become an alias or a parameter
            # Spark never sees as meant: refuse it rather than answer something else.
            if self._prev is not None and self._prev.text == "@":
                self.raise_error(
                    "`@` is only supported as Delta time travel right after a table name "
                    "(t@v<N> or t@yyyyMMddHHmmssSSS)"
                )
            return super()._parse_parameter()

    class Generator(DatabricksGenerator):
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **DatabricksGenerator.TRANSFORMS,
            Optimize: lambda self, e: optimize_sql(self, e),
            Show: show_sql,
            PrepareNode: prepared_sql,
            DecidePreparedNode: prepared_sql,
            Reorg: lambda self, e: reorg_sql(self, e),
            Vacuum: lambda self, e: vacuum_sql(self, e),
            Restore: lambda self, e: (
                f"RESTORE TABLE {self.sql(e, 'this')} TO {e.args['kind']} AS OF "
                f"{self.sql(e, 'expression')}"
            ),
            ReplaceTable: lambda self, e: (
                "REPLACE" + self.sql(e, "this")[len("CREATE OR REPLACE") :]
            ),
            CloneTable: lambda self, e: clone_sql(self, e),
            MergeWithEvolution: lambda self, e: (
                "MERGE WITH SCHEMA EVOLUTION " + self.sql(e, "this")[len("MERGE ") :]
            ),
            UnsetTableProperties: lambda self, e: (
                "UNSET TBLPROPERTIES "
                + ("IF EXISTS " if e.args.get("exists") else "")
                + f"({self.expressions(e, flat=True)})"
            ),
        }


class TxSqlSpark(Spark):
    """Spark SQL as txsql writes it for Spark 4.

    sqlglot's Spark dialect targets Sparks without ``parse_json`` and renders
    ``parse_json('{"a": 1}')`` as the bare string, which would store a STRING where the
    user wrote a VARIANT: the function is kept as written here.
    """

    class Generator(SparkGenerator):
        PARSE_JSON_NAME: str | None = "PARSE_JSON"

        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **SparkGenerator.TRANSFORMS,
            exp.JSONExtract: lambda self, e: self.variant_path_sql(e),
        }

        def variant_path_sql(self, expression: exp.JSONExtract) -> str:
            """``doc:a.b[0]`` stays Spark 4's VARIANT path syntax: sqlglot's Spark dialect
            renders it as ``GET_JSON_OBJECT``, which refuses a VARIANT column."""
            path = expression.expression
            if not expression.args.get("variant_extract") or not isinstance(path, exp.JSONPath):
                return str(SparkGenerator.TRANSFORMS[exp.JSONExtract](self, expression))
            steps = []
            for part in path.expressions:
                if isinstance(part, exp.JSONPathKey):
                    key = str(part.this)
                    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) and not part.args.get(
                        "quoted"
                    )
                    steps.append(f".{key}" if plain else "['" + key.replace("'", "\\'") + "']")
                elif isinstance(part, exp.JSONPathSubscript):
                    steps.append(f"[{part.this}]")
                elif not isinstance(part, exp.JSONPathRoot):
                    return str(SparkGenerator.TRANSFORMS[exp.JSONExtract](self, expression))
            target = expression.this
            base = self.sql(target)
            if not isinstance(target, (exp.Column, exp.Anonymous, exp.Func, exp.Paren)):
                base = f"({base})"
            text = "".join(steps)
            return f"{base}:{text[1:] if text.startswith('.') else text}"


__all__ = ["DIALECT", "SPARK", "TxSql", "TxSqlSpark"]
