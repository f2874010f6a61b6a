"""Row tracking (PROTOCOL.md "Row Tracking"): the facts a writer keeps in the log.

Every row has a *fresh* id, ``baseRowId`` of its file plus its physical row index (rows a
deletion vector deletes count), and a fresh commit version, its file's
``defaultRowCommitVersion``. A writer of a table listing the ``rowTracking`` writer feature
(unless ``delta.rowTrackingSuspended``) gives every new file a fresh range of ids above the
high-water mark kept in the ``delta.rowTracking`` domain, and moves the mark; a file it
commits again (a new deletion vector) keeps both fields. With ``delta.enableRowTracking``
the *stable* ids must also survive UPDATE, MERGE and compaction: a copied row carries its
id and commit version in the hidden columns :func:`materialized_columns` names (NULL there
means the fresh values above). :func:`copies_rows` tells which commits copy rows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from txsql.errors import CorruptLogError
from txsql.log.actions import Action, AddFile, DomainMetadata, Protocol, RemoveFile

FEATURE = "rowTracking"
DOMAIN = "delta.rowTracking"
ENABLE_PROPERTY = "delta.enableRowTracking"
SUSPENDED_PROPERTY = "delta.rowTrackingSuspended"
ROW_ID_COLUMN_PROPERTY = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN_PROPERTY = "delta.rowTracking.materializedRowCommitVersionColumnName"
PRESERVED_TAG = "delta.rowTracking.preserved"


def assigns_row_ids(protocol: Protocol, configuration: Mapping[str, str]) -> bool:
    """Whether commits must give new files ``baseRowId`` and ``defaultRowCommitVersion``.

    >>> assigns_row_ids(Protocol(3, 7, (), ("domainMetadata", "rowTracking")), {})
    True
    >>> assigns_row_ids(Protocol(3, 7, (), ("rowTracking",)), {SUSPENDED_PROPERTY: "true"})
    False
    """
    listed = FEATURE in (protocol.writer_features or ())
    return listed and not _true(configuration, SUSPENDED_PROPERTY)


def enabled(configuration: Mapping[str, str]) -> bool:
    """``delta.enableRowTracking``: every row's stable id must be kept."""
    return _true(configuration, ENABLE_PROPERTY)


def _true(configuration: Mapping[str, str], key: str) -> bool:
    return configuration.get(key, "").strip().lower() == "true"


def high_water_mark(domains: Iterable[DomainMetadata], current: int = -1) -> int:
    """The highest row id assigned, from ``delta.rowTracking`` domain actions (``current``
    when none names one; -1: no id assigned yet).

    >>> high_water_mark([DomainMetadata(DOMAIN, '{"rowIdHighWaterMark":41}')])
    41
    """
    mark = current
    for d in domains:
        if d.domain != DOMAIN or d.removed:
            continue
        try:
            value = json.loads(d.configuration)["rowIdHighWaterMark"]
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptLogError(
                f"the {DOMAIN} domain holds no rowIdHighWaterMark: {d.configuration!r}",
                hint="The table's row tracking state is damaged; restore the table from a "
                "backup or ask the writer that wrote it.",
            ) from exc
        mark = max(mark, int(value))
    return mark


def mark_domain(mark: int) -> DomainMetadata:
    """The domain action recording ``mark`` as the high-water mark."""
    return DomainMetadata(DOMAIN, json.dumps({"rowIdHighWaterMark": mark}, separators=(",", ":")))


def copies_rows(actions: Sequence[Action]) -> bool:
    """Whether a commit may move existing rows into new files (UPDATE, MERGE, copy-on-write
    DELETE, compaction): it removes files and adds files that are not those same files
    committed again. Such rows keep their stable ids only through the materialized columns.

    >>> copies_rows([AddFile("n", {}, 1, 0)])
    False
    >>> copies_rows([RemoveFile("f"), AddFile("n", {}, 1, 0)])
    True
    """
    removed = {a.path for a in actions if isinstance(a, RemoveFile)}
    if not removed:
        return False
    # A file committed again (a new DV) or restored keeps its baseRowId: not a copy.
    return any(
        isinstance(a, AddFile) and a.path not in removed and a.base_row_id is None for a in actions
    )


def materialized_columns(configuration: Mapping[str, str]) -> tuple[str, str] | None:
    """The hidden Parquet columns (row id, row commit version) that keep stable ids of
    copied rows, when ``delta.enableRowTracking`` is on and both names are set.

    >>> materialized_columns({ENABLE_PROPERTY: "true", ROW_ID_COLUMN_PROPERTY: "r",
    ...                       COMMIT_VERSION_COLUMN_PROPERTY: "v"})
    ('r', 'v')
    >>> materialized_columns({ROW_ID_COLUMN_PROPERTY: "r", COMMIT_VERSION_COLUMN_PROPERTY: "v"})
    """
    row_id = configuration.get(ROW_ID_COLUMN_PROPERTY)
    version = configuration.get(COMMIT_VERSION_COLUMN_PROPERTY)
    if not enabled(configuration) or not row_id or not version:
        return None
    return row_id, version


def materialized_column_names() -> dict[str, str]:
    """Fresh hidden column names for a table enabling row tracking, as Delta Spark names
    them (unique forever: a uuid each)."""
    return {
        ROW_ID_COLUMN_PROPERTY: f"_row-id-col-{uuid.uuid4()}",
        COMMIT_VERSION_COLUMN_PROPERTY: f"_row-commit-version-col-{uuid.uuid4()}",
    }


def with_column_names(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """``new`` table properties, completed when they turn ``delta.enableRowTracking`` on:
    the hidden column names are chosen then (kept if already set) and never change."""
    configuration = dict(new)
    if not enabled(new) or enabled(old):
        return configuration
    for key, name in materialized_column_names().items():
        configuration.setdefault(key, name)
    return configuration


def backfill(files: Sequence[AddFile]) -> list[AddFile]:
    """The files to commit again when row tracking is turned on for a table with rows
    (PROTOCOL.md "Row Tracking", backfill): every live file without ids, unchanged
    (``dataChange`` false, its DV kept). The commit gives each a fresh ``baseRowId`` range
    and its own version as ``defaultRowCommitVersion``, as for any new file.

    >>> tracked = AddFile("b", {}, 1, 0, base_row_id=0)
    >>> [(f.path, f.data_change) for f in backfill([AddFile("a", {}, 1, 0), tracked])]
    [('a', False)]
    """
    return [replace(f, data_change=False) for f in files if f.base_row_id is None]
