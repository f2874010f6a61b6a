"""Exactly-once writes with txn (appId, version) actions."""

from __future__ import annotations

import pytest

from tests.txn.harness import Lab
from txsql.errors import ConcurrentTransactionError
from txsql.log.actions import SetTransaction


def _batch(lab: Lab, app: str, version: int, name: str):  # type: ignore[no-untyped-def]
    txn = lab.txn()
    txn.set_app_version(app, version)
    txn.stage([lab.file(name, range(3))])
    return txn


def test_app_version_reads_the_last_committed_version() -> None:
    lab = Lab()
    txn = lab.txn()
    assert txn.app_version("q") is None
    assert _batch(lab, "q", 7, "b7").commit("STREAMING UPDATE").skipped is False
    reader = lab.txn()
    assert reader.app_version("q") == 7
    assert "q" in reader.read_set.app_ids


@pytest.mark.parametrize("version", [3, 5])
def test_repeated_or_older_batch_commits_nothing(version: int) -> None:
    lab = Lab()
    _batch(lab, "q", 5, "b5").commit("STREAMING UPDATE")
    before = lab.log.latest_version()
    result = _batch(lab, "q", version, "again").commit("STREAMING UPDATE")
    assert result.skipped is True
    assert result.actions == ()
    assert result.version == before
    assert lab.log.latest_version() == before, "nothing written"
    assert "again.parquet" not in {f.path for f in lab.log.snapshot().files}


def test_a_winner_committing_the_same_batch_makes_us_skip() -> None:
    lab = Lab()
    ours = _batch(lab, "q", 5, "ours")
    winner = _batch(lab, "q", 5, "theirs").commit("STREAMING UPDATE")
    result = ours.commit("STREAMING UPDATE")
    assert result.skipped and result.version == winner.version
    assert lab.log.latest_version() == winner.version
    assert ours.state == "skipped"


def test_a_winner_committing_an_older_batch_of_our_app_conflicts() -> None:
    lab = Lab()
    ours = _batch(lab, "q", 6, "ours")
    _batch(lab, "q", 5, "theirs").commit("STREAMING UPDATE")
    with pytest.raises(ConcurrentTransactionError) as info:
        ours.commit("STREAMING UPDATE")
    assert "application id" in info.value.rule


def test_other_app_ids_do_not_interfere() -> None:
    lab = Lab()
    ours = _batch(lab, "q1", 1, "ours")
    _batch(lab, "q2", 1, "theirs").commit("STREAMING UPDATE")
    result = ours.commit("STREAMING UPDATE")
    assert not result.skipped
    assert lab.log.snapshot().app_versions == {"q1": 1, "q2": 1}
    assert any(isinstance(a, SetTransaction) for a in result.actions)


def test_new_batch_commits_and_is_blind() -> None:
    lab = Lab()
    _batch(lab, "q", 1, "b1").commit("STREAMING UPDATE")
    result = _batch(lab, "q", 2, "b2").commit("STREAMING UPDATE")
    assert not result.skipped
    assert result.commit_info.is_blind_append is True, "reading app ids is not a data read"
