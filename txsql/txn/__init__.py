"""Optimistic transactions: read sets, Delta Spark's conflict checker with row-level scoping.

At the top, what a transaction is: :mod:`.transaction` (the ``Transaction`` context manager
and ``commit_together``), :mod:`.readset` and :mod:`.join_read` (what it read),
:mod:`.staging` (the actions it will commit), :mod:`.isolation`, :mod:`.winner` (a commit
that won a race), :mod:`.hooks` (what the planner answers with Spark), :mod:`.result`,
:mod:`.guards`. Below, one room each: :mod:`.commit` (how a commit lands),
:mod:`.conflicts` (the checker), :mod:`.rowlevel` (deletion-vector rows and rebases),
:mod:`.multitable` (the coordinator) and :mod:`.prepared` (prepared transactions).

Words: a transaction *stages* actions (``StagedActions``); a group participant's commit
written before ratification is a *staged commit* (Delta's multi-table RFC); COMMIT PREPARED
*re-stages* a prepared participant at its table's next version.
"""
