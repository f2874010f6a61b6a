"""Row-level concurrency on deletion vectors: which rows each side changed, and the rebases.

:mod:`.state` keeps, per file, the deletion vector we are based on and the rows we change;
:mod:`.row_map` is the record a txsql compaction leaves of where every row went;
:mod:`.compaction_races` plans how a DML and a compaction both commit; :mod:`.rebase` is
the one way our staged actions are rewritten onto a winner (a fresh DV per file).
"""
