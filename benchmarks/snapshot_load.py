"""Benchmark: cold snapshot load of a table with 10,000 commits and a checkpoint every 10.

Builds the log in a temporary directory (one appended file per commit, written with
``encode_commit`` + ``LogStore.write_if_absent``; ``DeltaLog.checkpoint`` every 10 commits),
then times a cold ``DeltaLog(...).snapshot()``: list ``_delta_log``, read
``_last_checkpoint`` and the 9,990 checkpoint, replay the last 9 commits.

Run: ``python benchmarks/snapshot_load.py [--commits N] [--repeat R]``. Goal: < 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid

from txsql.log.actions import AddFile, CommitInfo, Metadata, Protocol
from txsql.log.checkpoint import should_checkpoint
from txsql.log.codec import encode_commit
from txsql.log.deltalog import DeltaLog
from txsql.storage.logstore import log_store_for

GOAL_S = 0.5
SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "v", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def build(root: str, commits: int) -> None:
    """Write ``commits`` commits (version 0 creates the table) with periodic checkpoints."""
    store = log_store_for(root)
    log = DeltaLog(store)
    now = int(time.time() * 1000)
    for version in range(commits):
        actions: list = [CommitInfo(timestamp=now + version, operation="WRITE")]
        if version == 0:
            actions += [
                Protocol(1, 2),
                Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA, created_time=now),
            ]
        lo, hi = version * 10, version * 10 + 9
        stats = f'{{"numRecords":10,"minValues":{{"id":{lo}}},"maxValues":{{"id":{hi}}}}}'
        actions.append(
            AddFile(f"part-{version:05d}-{uuid.uuid4()}.parquet", {}, 1024, now, stats=stats)
        )
        store.write_if_absent(version, encode_commit(actions))
        if should_checkpoint(version, {}):
            # The cached DeltaLog replays only the 10 new commits each time.
            log.checkpoint(log.snapshot(version))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="txsql-bench-") as root:
        t0 = time.perf_counter()
        build(root, args.commits)
        print(f"built {args.commits} commits in {time.perf_counter() - t0:.1f} s")
        timings = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            snap = DeltaLog.for_path(root).snapshot()  # cold: a fresh DeltaLog each time
            timings.append(time.perf_counter() - t)
        assert snap.version == args.commits - 1 and len(snap.files) == args.commits
        best, median = min(timings), statistics.median(timings)
        verdict = "OK" if median < GOAL_S else "SLOWER THAN GOAL"
        print(
            f"cold snapshot load: median {median * 1000:.0f} ms, best {best * 1000:.0f} ms "
            f"({len(snap.files)} files, version {snap.version}); goal < {GOAL_S * 1000:.0f} ms "
            f"-> {verdict}"
        )


if __name__ == "__main__":
    main()
