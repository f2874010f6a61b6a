"""Liquid clustering (PROTOCOL.md "Clustered Table"): the clustering columns of a table.

A clustered table lists the writer features ``clustering`` and ``domainMetadata`` and keeps
its clustering columns in the ``delta.clustering`` domain:
``{"clusteringColumns": [["k"], ["a", "b"]]}``, each column a path of physical names (a
nested field has several parts). An empty list means the table was clustered once and is
not any more (``ALTER TABLE t CLUSTER BY NONE``). Files a clustering wrote carry
``clusteringProvider``; Delta Spark writes ``liquid``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from txsql.errors import CorruptLogError, SchemaError
from txsql.log.actions import DomainMetadata
from txsql.log.schema import StructType, physical_name

DOMAIN = "delta.clustering"
PROVIDER = "liquid"


def clustering_columns(domains: Mapping[str, DomainMetadata]) -> list[list[str]] | None:
    """The physical paths of the clustering columns; None when the table has no clustering
    domain (never clustered), [] after CLUSTER BY NONE.

    >>> clustering_columns({DOMAIN: domain([["k"], ["a", "b"]])})
    [['k'], ['a', 'b']]
    """
    found = domains.get(DOMAIN)
    if found is None or found.removed:
        return None
    try:
        columns = json.loads(found.configuration)["clusteringColumns"]
        return [[str(part) for part in column] for column in columns]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptLogError(
            f"the {DOMAIN} domain holds no clusteringColumns list: {found.configuration!r}",
            hint="The table's clustering state is damaged; set it again with ALTER TABLE t "
            "CLUSTER BY (...).",
        ) from exc


def domain(columns: Sequence[Sequence[str]]) -> DomainMetadata:
    """The domain action recording ``columns`` (physical paths) as the clustering columns."""
    value = {"clusteringColumns": [list(c) for c in columns]}
    return DomainMetadata(DOMAIN, json.dumps(value, separators=(",", ":")))


def physical_paths(
    schema: StructType, columns: Sequence[str], mode: str, table: str
) -> list[list[str]]:
    """The physical paths of top-level ``columns`` (logical names, any case).

    Raises:
        SchemaError: a column the table does not have, or named twice.
    """
    by_name = {f.name.lower(): f for f in schema.fields}
    paths, seen = [], set()
    for column in columns:
        field = by_name.get(column.lower())
        if field is None:
            raise SchemaError(
                f"cannot cluster {table} by {column}: it has no such column",
                hint=f"Its columns are {', '.join(f.name for f in schema.fields)}.",
            )
        if field.name.lower() in seen:
            raise SchemaError(f"{column} is named twice in CLUSTER BY", hint="Name it once.")
        seen.add(field.name.lower())
        paths.append([physical_name(field, mode)])
    return paths


def logical_names(schema: StructType, paths: Sequence[Sequence[str]], mode: str) -> list[str]:
    """Top-level logical names of physical ``paths`` (a nested path joined by dots)."""
    by_physical: dict[str, Any] = {physical_name(f, mode): f for f in schema.fields}
    names = []
    for path in paths:
        field = by_physical.get(path[0])
        names.append(".".join([field.name if field is not None else path[0], *path[1:]]))
    return names
