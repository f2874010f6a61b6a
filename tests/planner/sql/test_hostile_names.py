"""User columns named like txsql's helper columns survive every statement.

Each statement runs on txsql and on a plain DuckDB table holding the same rows (the
oracle), and the full table contents must agree after it; DuckDB's delta_scan reads the
final version too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

import txsql
from tests.interop.readers import duckdb_rows
from txsql.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Columns named like the hidden scan columns, Spark's metadata struct and txsql helpers.
HOSTILE = ["_file", "_row_index", "_metadata", "_txsql_fk", "_txsql_ri", "__txsql_set_0"]


@pytest.fixture()
def s(spark: SparkSession, tmp_path: Path) -> txsql.Session:
    return txsql.Session(spark=spark, warehouse=str(tmp_path / "wh"))


def _rows(s: txsql.Session, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in s.sql(query).df.collect())


def test_every_statement_keeps_hostile_columns(s: txsql.Session) -> None:
    cols = ", ".join(f"`{c}` STRING" for c in HOSTILE)
    s.sql(f"CREATE TABLE h (id INT, {cols}) TBLPROPERTIES ('delta.enableDeletionVectors'='true')")
    duck = duckdb.connect()
    duck_cols = ", ".join(f'"{c}" VARCHAR' for c in HOSTILE)
    duck.execute(f"CREATE TABLE h (id INT, {duck_cols})")
    values = ", ".join(
        "(" + ", ".join([str(i)] + [f"'{c}{i}'" for c in HOSTILE]) + ")" for i in range(1, 6)
    )
    statements = [
        f"INSERT INTO h VALUES {values}",
        "UPDATE h SET `_txsql_fk` = 'u', `_file` = 'f' WHERE id = 1",
        "DELETE FROM h WHERE `_row_index` = '_row_index2' OR `_metadata` = '_metadata3'",
        "UPDATE h SET `_metadata` = `_txsql_ri` WHERE `_txsql_fk` = '_txsql_fk4'",
    ]
    everything = "id, " + ", ".join(f"`{c}`" for c in HOSTILE)
    for statement in statements:
        s.sql(statement)
        duck.execute(statement.replace("`", '"'))
        assert _rows(s, f"SELECT {everything} FROM h") == sorted(
            duck.execute("SELECT * FROM h").fetchall()
        ), statement
    # MERGE: update one row, insert one; OPTIMIZE compacts; both keep every column's value.
    s.sql(
        "MERGE INTO h USING (SELECT 5 AS id, 'm' AS v UNION ALL SELECT 9, 'n') src "
        "ON h.id = src.id WHEN MATCHED THEN UPDATE SET `_file` = src.v "
        "WHEN NOT MATCHED THEN INSERT (id, `_file`) VALUES (src.id, src.v)"
    )
    duck.execute("UPDATE h SET \"_file\" = 'm' WHERE id = 5")
    duck.execute("INSERT INTO h (id, \"_file\") VALUES (9, 'n')")
    expected = sorted(duck.execute("SELECT * FROM h").fetchall())
    assert _rows(s, f"SELECT {everything} FROM h") == expected
    s.sql("OPTIMIZE h")
    assert _rows(s, "SELECT * FROM h") == expected  # SELECT *: the user's columns win
    # Time travel reads version 1 (the INSERT) exactly.
    first = sorted(tuple([i] + [f"{c}{i}" for c in HOSTILE]) for i in range(1, 6))
    assert _rows(s, f"SELECT {everything} FROM h VERSION AS OF 1") == first
    handle = s.table("h")
    quoted = ", ".join(["id"] + [f'"{c}"' for c in HOSTILE])
    assert duckdb_rows(handle.location, handle.version(), quoted) == expected


def test_copy_on_write_delete_with_hostile_columns(s: txsql.Session) -> None:
    # Without deletion vectors DELETE rewrites the file: the anti-join must not clash.
    s.sql("CREATE TABLE c (`_file` INT, `_txsql_deleted_file` STRING, `_row_index` BIGINT)")
    s.sql("INSERT INTO c VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
    s.sql("DELETE FROM c WHERE `_row_index` = 20")
    assert _rows(s, "SELECT * FROM c") == [(1, "a", 10), (3, "c", 30)]


def test_insert_select_with_duplicate_output_names(s: txsql.Session) -> None:
    s.sql("CREATE TABLE f (id INT, name STRING, n INT)")
    s.sql("INSERT INTO f SELECT 2, 'c', 2")
    s.sql("INSERT INTO f SELECT id, name, id FROM f")
    assert _rows(s, "SELECT * FROM f") == [(2, "c", 2), (2, "c", 2)]


def test_self_join_with_same_column_names(s: txsql.Session) -> None:
    s.sql("CREATE TABLE j (id INT, v STRING)")
    s.sql("INSERT INTO j VALUES (1, 'a'), (2, 'b')")
    rows = _rows(s, "SELECT a.id, a.v, b.id, b.v FROM j a JOIN j b ON a.id + 1 = b.id")
    assert rows == [(1, "a", 2, "b")]
    s.sql("CREATE TABLE k (x INT, y INT)")
    s.sql("INSERT INTO k SELECT a.id, b.id FROM j a JOIN j b ON a.id < b.id")
    assert _rows(s, "SELECT * FROM k") == [(1, 2)]


def test_diff_keeps_a_column_named_like_its_marker(s: txsql.Session) -> None:
    from txsql.magics.diff import version_diff

    s.sql("CREATE TABLE d (id INT, `__txsql_change` STRING)")
    s.sql("INSERT INTO d VALUES (1, 'a')")
    s.sql("INSERT INTO d VALUES (2, '+')")
    view = version_diff(s, "d", 1, 2, None)
    assert (view.added, view.removed) == ([(2, "+")], [])


def test_row_level_reads_use_the_hidden_columns_not_the_users(s: txsql.Session) -> None:
    """A SELECT … WHERE inside a transaction records physical rows, even on a table whose own
    columns are named `_file` and `_row_index`: a change to another row does not abort it, a
    change to the row it read does (Serializable validates the read table at COMMIT)."""
    from txsql.errors import CommitConflictError

    s.sql(
        "CREATE TABLE h (id INT, `_file` STRING, `_row_index` BIGINT) "
        "TBLPROPERTIES ('delta.enableDeletionVectors'='true')"
    )
    s.sql("INSERT INTO h VALUES (1, 'x', 7), (2, 'y', 8)")
    s.sql("CREATE TABLE out (n BIGINT)")
    tx = s.begin("Serializable")
    tx.sql("SELECT * FROM h WHERE id = 1")
    tx.sql("INSERT INTO out VALUES (1)")
    s.sql("UPDATE h SET `_file` = 'z' WHERE id = 2")  # another row: no conflict
    tx.commit()
    tx = s.begin("Serializable")
    tx.sql("SELECT * FROM h WHERE id = 1")
    tx.sql("INSERT INTO out VALUES (2)")
    s.sql("DELETE FROM h WHERE id = 1")  # the row tx read (a DV, no rows added)
    with pytest.raises(CommitConflictError) as e:
        tx.commit()
    assert "rows we matched" in e.value.rule  # row level: the physical row tx read
    assert _rows(s, "SELECT id, `_file`, `_row_index` FROM h") == [(2, "z", 8)]
    assert _rows(s, "SELECT n FROM out") == [(1,)]


def _spark_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _duck_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


DV_ON = "'delta.enableDeletionVectors' = 'true'"
QUOTED = {"bt": "back`tick", "dot": "dot.col", "space": "a b"}
STATEMENTS = [
    "INSERT INTO {t} VALUES (1, 10, 100, 1000), (2, 20, 200, 2000), (3, 30, 300, 3000)",
    "UPDATE {t} SET {bt} = {bt} + 1, {dot} = -1 WHERE {space} >= 2000",
    "UPDATE {t} AS q SET q.{dot} = q.{bt} * 2 WHERE id = 1",  # DuckDB: no q. in SET
    "DELETE FROM {t} WHERE {bt} = 31",
    "INSERT INTO {t} (id, {dot}) VALUES (4, 4)",
]


@pytest.mark.parametrize("table", ["t`x", "a b", "plain"])
def test_quoted_table_and_column_names_with_backticks_and_dots(
    s: txsql.Session, table: str
) -> None:
    """`back``tick`, `dot.col` and `a b` as columns, a backtick or a space in the table name:
    each statement runs on txsql and on a DuckDB table of the same rows (the oracle), and
    DuckDB's delta_scan reads txsql's table exactly like the oracle's after each one."""
    name = _spark_quote(table)
    cols = ", ".join(f"{_spark_quote(c)} INT" for c in QUOTED.values())
    s.sql(f"CREATE TABLE {name} (id INT, {cols}) TBLPROPERTIES ({DV_ON})")
    duck = duckdb.connect()
    spark_names = {k: _spark_quote(v) for k, v in QUOTED.items()}
    duck_names = {k: _duck_quote(v) for k, v in QUOTED.items()}
    duck.execute(f"CREATE TABLE o (id INT, {', '.join(f'{c} INT' for c in duck_names.values())})")
    columns = "id, " + ", ".join(duck_names.values())

    def run(table: str, oracle: str, statement: str) -> None:
        s.sql(statement.format(t=table, **spark_names))
        duck.execute(statement.replace("SET q.", "SET ").format(t=oracle, **duck_names))
        expected = sorted(duck.execute(f"SELECT * FROM {oracle}").fetchall())
        handle = s.table(table)
        assert duckdb_rows(handle.location, handle.version(), columns) == expected, statement
        assert _rows(s, f"SELECT * FROM {table}") == expected, statement

    for statement in STATEMENTS:
        run(name, "o", statement)
    # MERGE SET by qualified names holding a dot (a quoted name part, not a struct field),
    # into a copy without the backtick column (MERGE's write step quotes names itself).
    copied = _spark_quote(table + "_m")
    del duck_names["bt"]
    columns = "id, " + ", ".join(duck_names.values())
    s.sql(f"CREATE TABLE {copied} AS SELECT {columns.replace(chr(34), '`')} FROM {name}")
    duck.execute(f"CREATE TABLE om AS SELECT {columns} FROM o")
    merge = (
        "MERGE INTO {t} AS q USING (SELECT 2 AS k, 7 AS v UNION ALL SELECT 5, 5) src "
        "ON q.id = src.k WHEN MATCHED THEN UPDATE SET q.{dot} = src.v, {space} = 0 "
        "WHEN NOT MATCHED THEN INSERT (id, {dot}) VALUES (src.k, src.v)"
    )
    run(copied, "om", merge)
    shown = s.sql(f"SHOW CREATE TABLE {name}").collect()[0][0]
    assert shown.startswith(f"CREATE TABLE default.{name if table != 'plain' else table} (")


def test_names_that_would_change_a_path_are_refused(s: txsql.Session) -> None:
    for name in ("`a/b`", "`a:b`", "` a`", "`a%2Fb`"):
        with pytest.raises(SqlError, match="invalid table name"):
            s.sql(f"CREATE TABLE {name} (id INT)")
