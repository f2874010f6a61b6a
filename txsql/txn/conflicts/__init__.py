"""The conflict checker: one winning commit against our transaction, in Delta Spark's order.

Read it room by room, in the order a winner is checked (:mod:`.checker` runs the steps):

1-4. :mod:`.table_state`: protocol, metadata, domain metadata, app ids;
   (row level) the compaction race, :mod:`txsql.txn.rowlevel.compaction_races`;
5. :mod:`.added_files`: files (rows) a winner added that we should have read;
5b. :mod:`.revived_rows`: rows a winner brought back, and paths it re-added;
6-7. :mod:`.deleted_files`: files (rows) a winner deleted that we read or delete too.

:mod:`.view` is what every step sees of our transaction, :mod:`.same_rows` names the rows
two writers both changed, and :mod:`.report` raises the error a user reads.
"""
