"""Transactions across tables: the commit coordinator, group commits and read points.

:mod:`.coordinator` holds the numbered records (stage, group-ratify, publish of Delta's
multi-table RFC); :mod:`.group_commit` commits a group of participants through it;
:mod:`.read_point` pins every read of a transaction at one coordinator position;
:mod:`.compaction` deletes old records behind a summary of the lowest live position.
"""
