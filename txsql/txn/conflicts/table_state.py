"""Steps 1-4 of the checker: protocol, metadata, domain metadata and app ids.

These rules look at table-wide state, not at files: a winner that upgraded the protocol
or flipped an allow-listed property (``delta.enableDeletionVectors=true``) is adopted;
anything else that changes the table's shape fails every concurrent writer, as in Delta.
A prepared commit's bytes are fixed, so it adopts nothing
(:func:`check_protocol_and_metadata_unchanged` replaces steps 1-2 for it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from txsql.errors import (
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
    TableCreatedConcurrentlyError,
    UnsupportedFeatureError,
)
from txsql.log import column_rules, features
from txsql.log.actions import Action, DomainMetadata, Metadata, Protocol, SetTransaction
from txsql.txn.conflicts.view import Check

# Keys a concurrent commit may add or change without failing us, with the values allowed
# (None: any value). Delta Spark's allow-list, minus what txsql cannot write anyway
# (column mapping, row tracking): those fail on re-validation instead.
ALLOWED_PROPERTY_CHANGES: dict[str, frozenset[str] | None] = {
    "delta.enableDeletionVectors": frozenset({"true"}),
    "delta.enableInCommitTimestamps": frozenset({"true"}),
    "delta.inCommitTimestampEnablementVersion": None,
    "delta.inCommitTimestampEnablementTimestamp": None,
    "delta.checkpointPolicy": frozenset({"v2"}),
}
_ROW_TRACKING_DOMAIN = "delta.rowTracking"


def check_protocol(check: Check) -> None:
    """Step 1: adopt the winner's protocol if it upgraded it."""
    winner, report = check.winner, check.report
    ours, current, metadata = check.ours.actions, check.outcome.protocol, check.outcome.metadata
    if winner.version == 0 and _creates_table(ours):
        # Two CREATEs raced for version 0: the first one written created the table. The
        # loser must not land as version 1 (it would replace the winner's schema).
        report.fail(
            TableCreatedConcurrentlyError,
            "the table was created concurrently by another writer",
            rule="both transactions created the table",
            hint="Another CREATE of this table won the race. Use the table it created, or "
            "CREATE TABLE IF NOT EXISTS to skip an existing table.",
        )
    theirs = winner.protocol
    if theirs is None:
        return
    if any(isinstance(a, Protocol) for a in ours):
        report.fail(
            ProtocolChangedError,
            "the table protocol was changed concurrently while this transaction changes it too",
            rule="both transactions changed the protocol",
            hint="Two CREATE TABLEs or upgrades raced; re-run yours against the new table "
            "(CREATE TABLE IF NOT EXISTS skips an existing table).",
        )
    dropped = (features.reader_features(current) - features.reader_features(theirs)) | (
        features.writer_features(current) - features.writer_features(theirs)
    )
    if dropped:
        report.fail(
            ProtocolChangedError,
            f"the table protocol dropped feature(s) {', '.join(sorted(dropped))} concurrently",
            rule="the winner removed table features",
            hint="Re-run the statement; it will read the table with its new protocol.",
        )
    try:
        features.check_writable(
            theirs, winner.metadata or metadata, existing=winner.metadata or metadata
        )
    except UnsupportedFeatureError as exc:
        report.fail(
            ProtocolChangedError,
            f"the table was upgraded concurrently to a protocol txsql cannot write ({exc.message})",
            rule="the winner upgraded the protocol beyond what txsql writes",
            hint=exc.hint,
        )
    check.outcome.protocol = theirs


def _creates_table(ours: Sequence[Action]) -> bool:
    return any(isinstance(a, Protocol) for a in ours) and any(isinstance(a, Metadata) for a in ours)


def check_metadata(check: Check) -> None:
    """Step 2: adopt the winner's metadata if it only made an allow-listed change."""
    report, ours = check.report, check.ours.actions
    current, protocol = check.outcome.metadata, check.outcome.protocol
    theirs = check.winner.metadata
    if theirs is None:
        return
    if any(isinstance(a, Metadata) for a in ours):
        report.fail(
            MetadataChangedError,
            "the table schema or properties were changed concurrently while this transaction "
            "changes them too",
            rule="both transactions changed the metadata",
            hint="Re-run the ALTER/CREATE after the other change; it will start from it.",
        )
    problem = _disallowed_change(current, theirs)
    if problem:
        report.fail(
            MetadataChangedError,
            f"the table metadata was changed concurrently ({problem})",
            rule="the winner changed the schema or a table property",
            hint="Re-run the statement: it will read the new schema and properties. Run "
            "schema changes when no writer is active to avoid this.",
        )
    try:
        features.check_writable(protocol, theirs, existing=theirs)
    except UnsupportedFeatureError as exc:
        report.fail(
            MetadataChangedError,
            f"the table was changed concurrently to use a feature txsql cannot write "
            f"({exc.message})",
            rule="the winner enabled a feature txsql does not write",
            hint=exc.hint,
        )
    check.outcome.metadata = theirs


def check_protocol_and_metadata_unchanged(check: Check) -> None:
    """Steps 1-2 for a commit that adopts nothing: any protocol or metadata change fails."""
    winner = check.winner
    if winner.protocol is None and winner.metadata is None:
        return
    what = "protocol" if winner.protocol is not None else "schema or properties"
    check.report.fail(
        MetadataChangedError,
        f"the table's {what} changed since this transaction was prepared",
        rule=f"it changed the table's {what}",
        hint="A prepared commit cannot adopt a new protocol, schema or property; run the "
        "transaction again against the table as it is now.",
    )


def _disallowed_change(old: Metadata, new: Metadata) -> str | None:
    """Why ``old`` -> ``new`` is not an allow-listed change, or None if it is."""
    # Moving an identity high-water mark (an INSERT handing out ids) is allow-listed too.
    marks = column_rules.without_high_water_marks
    same_shape = replace(
        new, configuration=old.configuration, schema_string=marks(new.schema_string)
    ) == replace(old, schema_string=marks(old.schema_string))
    if not same_shape:
        return "schema, partitioning, name or description changed"
    removed = sorted(set(old.configuration) - set(new.configuration))
    if removed:
        return f"property {', '.join(removed)} was unset"
    for key, value in new.configuration.items():
        if old.configuration.get(key) == value:
            continue
        allowed = ALLOWED_PROPERTY_CHANGES.get(key, frozenset())
        if allowed is not None and value.strip().lower() not in allowed:
            return f"property {key} was set to {value!r}"
    return None


def check_domains(check: Check) -> None:
    """Step 3: both commits writing one metadata domain conflict (row tracking excepted)."""
    winner, report = check.winner, check.report
    mine = {a.domain for a in check.ours.actions if isinstance(a, DomainMetadata)}
    clash = sorted(
        (mine & {d.domain for d in winner.of_type(DomainMetadata)}) - {_ROW_TRACKING_DOMAIN}
    )
    if clash:
        report.fail(
            ConcurrentTransactionError,
            f"metadata domain {', '.join(clash)} was written concurrently",
            rule="both transactions wrote the same metadata domain",
            hint="Re-run the statement; it will start from the other writer's domain value.",
        )


def check_app_ids(check: Check) -> None:
    """Step 4: a winner writing an app id we looked up means another run of our writer."""
    written = {t.app_id for t in check.winner.of_type(SetTransaction)}
    clash = sorted(check.ours.read_set.app_ids & written)
    if clash:
        check.report.fail(
            ConcurrentTransactionError,
            f"application id {', '.join(clash)} committed concurrently",
            rule="both transactions used the same application id",
            hint="Another run of this idempotent writer (same app id, e.g. the same stream "
            "checkpoint) committed first; make sure only one runs at a time, then retry.",
        )
