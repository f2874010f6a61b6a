"""The catalog on an s3:// warehouse: names are claimed with conditional PUTs, so racing
CREATEs of one name from several catalogs (processes) never both register it."""

from __future__ import annotations

import threading

from tests.storage.moto_s3 import MotoS3
from txsql.errors import TableExistsError
from txsql.planner.catalog import Catalog
from txsql.planner.sql.refs import TableRef
from txsql.storage.factory import configure_storage, storage_context


def test_racing_claims_of_one_name_register_exactly_one_location(
    moto_s3: MotoS3, s3_bucket: str
) -> None:
    before = storage_context()
    configure_storage(moto_s3.options())
    try:
        warehouse = f"s3://{s3_bucket}/wh"
        catalogs = [Catalog(warehouse) for _ in range(6)]  # one per simulated process
        barrier = threading.Barrier(len(catalogs))
        won: list[str] = []
        refused: list[str] = []

        def create(i: int) -> None:
            location = f"s3://{s3_bucket}/tables/t{i}"
            barrier.wait()
            try:
                if catalogs[i].claim(TableRef(name="t"), location):
                    won.append(location)
            except TableExistsError:
                refused.append(location)

        threads = [threading.Thread(target=create, args=(i,)) for i in range(len(catalogs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1 and len(refused) == len(catalogs) - 1
        assert Catalog(warehouse).registered_location("t") == won[0]
        assert moto_s3.keys(s3_bucket) == ["wh/_txsql_catalog/t.json"]
        # Releasing a claim whose CREATE failed removes the entry (no table was made).
        Catalog(warehouse).release(TableRef(name="t"), won[0])
        assert moto_s3.keys(s3_bucket) == []
    finally:
        configure_storage(before.storage_options, before.hadoop_conf, before.spark_schemes)
