"""Prepared transactions: PREPARE TRANSACTION, then COMMIT / ROLLBACK PREPARED anywhere.

:mod:`.prepare` checks and records the participants; :mod:`.records` is the durable record
and where decisions are found; :mod:`.restage` re-checks a participant against the commits
since it was prepared; :mod:`.decide` ratifies the decision through the coordinator.
"""
