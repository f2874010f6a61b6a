"""Fit query output to a table schema: column matching and casts.

NOT NULL, CHECK constraints and generated-column checks run in the write itself
(:mod:`txsql.engine.write_rules`), so every statement that writes rows gets them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import DecimalType, IntegralType, StructField

from txsql.engine.scan_columns import sql_type
from txsql.engine.scan_files import sql_string
from txsql.engine.schema import quote
from txsql.engine.spark_types import spark_schema
from txsql.errors import IdentityColumnError, SchemaError
from txsql.log.column_rules import DEFAULT_KEY, GENERATION_KEY, identity_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ANSI_CONF = "spark.sql.ansi.enabled"


def conform_to_schema(
    df: DataFrame,
    schema_json: dict[str, Any],
    columns: Sequence[str] | None,
    table: str,
    *,
    inserting: bool = False,
    keep: Sequence[str] = (),
) -> DataFrame:
    """Return ``df`` with exactly the table's columns, in order, cast to their types (then
    the ``keep`` columns, ``df``'s last ones, as they are: a MERGE's row id columns).

    Without a column list the query's columns match the table's by position (like Spark's
    INSERT); with one, they match the listed columns and unlisted columns become NULL,
    except columns the table computes (generated, identity, with a default): those are
    left out so the write fills them in.

    Raises:
        SchemaError: unknown columns, or a column count that does not match.
        IdentityColumnError: ``inserting`` new rows with a value for a GENERATED ALWAYS
            identity column (UPDATE and MERGE rewrite rows that already have theirs).
    """
    schema = spark_schema(schema_json)
    target_names = [f.name for f in schema.fields]
    # Query columns are matched by position, as Spark does. Duplicate output names
    # (INSERT ... SELECT 2, 'c', 2) would be ambiguous: only then rename them all.
    source = list(df.columns)[: len(df.columns) - len(keep)]
    assert list(df.columns)[len(source) :] == list(keep), "kept columns come last"
    if len({name.lower() for name in source}) < len(source):
        source = [f"_c{i}" for i in range(len(source))]
        df = df.toDF(*source, *keep)
    if columns is None:
        if len(source) != len(target_names):
            raise SchemaError(
                f"cannot write to {table}: the query produces {len(source)} column(s) but the "
                f"table has {len(target_names)} ({', '.join(target_names)})",
                hint="Select one value per table column, or name the columns: "
                "INSERT INTO t (a, b) ...",
            )
        mapping = dict(zip(target_names, source))
    else:
        lowered = {n.lower(): n for n in target_names}
        unknown = [c for c in columns if c.lower() not in lowered]
        if unknown:
            raise SchemaError(
                f"cannot write to {table}: unknown column(s) {', '.join(unknown)}",
                hint=f"The table's columns are {', '.join(target_names)}.",
            )
        if len(columns) != len(source):
            raise SchemaError(
                f"cannot write to {table}: {len(columns)} column(s) listed but the query "
                f"produces {len(source)}",
                hint="List one column per value.",
            )
        mapping = {lowered[c.lower()]: s for c, s in zip(columns, source)}
    computed = computed_columns(schema_json)
    checked = ansi_off(df.sparkSession)
    source_types = {f.name: f.dataType for f in df.schema.fields}
    projected: list[str] = []
    for field in schema.fields:
        source_name = mapping.get(field.name)
        if source_name is None and field.name.lower() in computed:
            continue  # generated / identity / default: the write computes it
        if inserting and source_name is not None and computed.get(field.name.lower()) == "always":
            raise IdentityColumnError(
                f"cannot write {table}.{field.name}: it is a GENERATED ALWAYS identity column"
                + (
                    ""
                    if columns is not None
                    else " (INSERT without a column list gives it a value)"
                )
            )
        value = "NULL" if source_name is None else quote(source_name)
        if checked and source_name is not None and source_types[source_name] != field.dataType:
            value = fit_checked(value, field)
        projected.append(cast_to_column(value, field))
    # SQL text: one py4j round trip, where a Column costs several per part (scan_columns).
    return df.selectExpr(*projected, *map(quote, keep))


def typed_columns(schema_json: dict[str, Any], values: Mapping[str, str]) -> list[str]:
    """Every table column, in order, as SQL text casting its value in ``values`` (SQL
    text by column name; a column not there keeps the column of that name) to its type.
    UPDATE selects these in the projection that computes the new values, where
    :func:`conform_to_schema` would cost a projection (an analysis) of its own."""
    fields = spark_schema(schema_json).fields
    return [cast_to_column(values.get(f.name, quote(f.name)), f) for f in fields]


def cast_to_column(value: str, field: StructField) -> str:
    """``value`` (SQL text) cast to ``field``'s type, named as the field."""
    return f"CAST({value} AS {sql_type(field.dataType)}) AS {quote(field.name)}"


def ansi_off(spark: SparkSession) -> bool:
    """Spark's ANSI mode is off: a CAST then stores NULL or a wrapped-around number for a
    value its type cannot hold, where txsql's writes rely on it failing."""
    return str(spark.conf.get(ANSI_CONF, "true") or "true").strip().lower() == "false"


def fit_checked(value: str, field: StructField) -> str:
    """``value`` (SQL text) as it is, except that a value the numeric type of ``field``
    cannot hold fails the job, as an ANSI cast does: written where :func:`ansi_off` holds,
    so no write ever stores an overflowed number. Other types are left to the cast."""
    if not isinstance(field.dataType, (IntegralType, DecimalType)):
        return value
    target = sql_type(field.dataType)
    # Spark's own error class and SQLSTATE, so it maps to ArithmeticOverflowError.
    message = (
        f"[CAST_OVERFLOW_IN_TABLE_INSERT] A value does not fit the {target.upper()} column "
        f"{field.name} (spark.sql.ansi.enabled is false; txsql checks the fit itself). "
        "SQLSTATE: 22003"
    )
    fits = f"({value}) IS NULL OR try_cast(({value}) AS {target}) IS NOT NULL"
    return f"CASE WHEN {fits} THEN ({value}) ELSE raise_error({sql_string(message)}) END"


def computed_columns(schema_json: dict[str, Any]) -> dict[str, str]:
    """Lower-cased columns the writer computes when omitted -> ``generated``, ``default``,
    ``identity`` or ``always`` (GENERATED ALWAYS identity: explicit values refused).

    >>> computed_columns({"fields": [{"name": "A", "metadata": {"CURRENT_DEFAULT": "1"}}]})
    {'a': 'default'}
    """
    found: dict[str, str] = {}
    for field in schema_json.get("fields", []):
        meta = field.get("metadata") or {}
        spec = identity_of(field["name"], meta)
        if spec is not None:
            found[field["name"].lower()] = "identity" if spec.allow_explicit else "always"
        elif GENERATION_KEY in meta:
            found[field["name"].lower()] = "generated"
        elif DEFAULT_KEY in meta:
            found[field["name"].lower()] = "default"
    return found
