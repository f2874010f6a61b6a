"""MERGE planning without Spark: the statement model, name resolution and its errors."""

from __future__ import annotations

import json

import pytest
import sqlglot

from txsql.errors import SchemaError, SqlError, UnsupportedStatementError
from txsql.planner.operations.merge.plan import MergePlan, operation_parameters, plan_merge
from txsql.planner.sql.build import build_statement
from txsql.planner.sql.dialect import DIALECT, SPARK
from txsql.planner.sql.statements import Merge

TARGET = ["id", "v", "p"]
SOURCE = ["id", "v", "p", "extra"]


def _merge(sql: str) -> Merge:
    statement = build_statement(sqlglot.parse_one(sql, read=DIALECT))
    assert isinstance(statement, Merge)
    return statement


def _plan(sql: str, source: list[str] = SOURCE) -> MergePlan:
    return plan_merge(_merge(sql), TARGET, source)


def test_clauses_keep_order_kind_and_action() -> None:
    merge = _merge(
        "MERGE INTO t AS x USING (SELECT * FROM s) AS y ON x.id = y.id "
        "WHEN MATCHED AND y.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED BY TARGET THEN INSERT (id) VALUES (y.id) "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'gone'"
    )
    assert (merge.target.name, merge.target_alias, merge.source_alias) == ("t", "x", "y")
    kinds = [(c.match, c.action, c.condition is not None) for c in merge.clauses]
    assert kinds == [
        ("matched", "delete", True),
        ("matched", "update", False),
        ("not_matched", "insert", False),
        ("not_matched_by_source", "update", False),
    ]
    assert merge.source.sql(SPARK) == "SELECT * FROM (SELECT * FROM s) AS y"


def test_outputs_are_qualified_and_complete() -> None:
    plan = _plan(
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = extra "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (id, 'new')"
    )
    update, insert = plan.clauses
    # `extra` is source-only, `id` in INSERT can only be the source's: both get qualified
    assert update.outputs is not None and insert.outputs is not None
    assert insert.outputs == {"id": "`s`.`id`", "v": "'new'", "p": "NULL"}
    assert update.outputs == {"id": "`t`.`id`", "v": "`s`.`extra`", "p": "`t`.`p`"}
    assert plan.on == "`t`.`id` = `s`.`id`" and plan.join == "right"


def test_ambiguous_and_unknown_columns() -> None:
    with pytest.raises(SchemaError, match="ambiguous"):
        _plan("MERGE INTO t USING s ON id = s.id WHEN MATCHED THEN DELETE")
    with pytest.raises(SchemaError, match="unknown column"):
        _plan("MERGE INTO t USING s ON t.id = s.nope WHEN MATCHED THEN DELETE")
    with pytest.raises(SchemaError, match="not a column of the target"):
        _plan("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET extra = 1")
    with pytest.raises(SchemaError, match="unknown table or alias"):
        _plan("MERGE INTO t AS x USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
    with pytest.raises(SchemaError, match="assigned twice"):
        _plan("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 1, t.v = 2")


def test_clause_visibility_rules() -> None:
    with pytest.raises(SchemaError, match="cannot read target"):
        _plan("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (t.id)")
    with pytest.raises(SchemaError, match="cannot read source"):
        _plan(
            "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND s.v = 1 THEN DELETE"
        )
    # unqualified names resolve to the only visible side
    plan = _plan(
        "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND v = 1 THEN DELETE"
    )
    assert plan.clauses[0].condition == "`t`.`v` = 1" and plan.join == "left"


def test_star_needs_every_target_column_in_the_source() -> None:
    with pytest.raises(SchemaError, match="no column"):
        _plan("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *", ["id", "v"])
    with pytest.raises(SchemaError, match="2 value"):
        _plan("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (1, 2)")


def test_statement_level_errors() -> None:
    with pytest.raises(SqlError, match="only the last WHEN MATCHED"):
        _merge(
            "MERGE INTO t USING s ON t.id = s.id "
            "WHEN MATCHED THEN DELETE WHEN MATCHED THEN UPDATE SET *"
        )
    with pytest.raises(SqlError, match="UPDATE SET \\*"):
        _merge("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET *")
    with pytest.raises(SqlError, match="both called"):
        _merge("MERGE INTO t USING t ON t.id = t.id WHEN MATCHED THEN DELETE")
    with pytest.raises(UnsupportedStatementError, match="subqueries"):
        _plan(
            "MERGE INTO t USING s ON t.id = s.id "
            "WHEN MATCHED AND s.v IN (SELECT v FROM u) THEN DELETE"
        )


def test_target_filter_and_duplicates_rule() -> None:
    plan = _plan(
        "MERGE INTO t AS x USING s AS y ON x.id = y.id AND x.p = 1 AND rand() < x.v "
        "WHEN MATCHED THEN DELETE"
    )
    assert plan.target_filter is not None and plan.target_filter.sql(SPARK) == "`p` = 1"
    assert plan.duplicates_allowed and plan.join == "inner"
    insert_only = _plan("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert insert_only.join == "insert_only" and insert_only.target_filter is None
    both = _plan(
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.v > 0 THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE"
    )
    assert both.join == "full" and not both.duplicates_allowed


def test_operation_parameters_are_delta_json_strings() -> None:
    params = operation_parameters(
        _merge(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.v > 1 THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    )
    assert json.loads(params["predicate"]) == ["t.id = s.id"]
    assert json.loads(params["matchedPredicates"]) == [
        {"predicate": "s.v > 1", "actionType": "update"}
    ]
    assert params["notMatchedPredicates"] == '[{"actionType":"insert"}]'
    assert params["notMatchedBySourcePredicates"] == "[]"
