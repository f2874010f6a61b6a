"""engine/write.py's object-store half against moto: part files Spark left under a fresh
directory become ``add`` actions (paths, partition values, sizes, footer stats).

Spark itself cannot write to s3a:// here (hadoop-aws is not installable), so the part
files are put in the bucket by pyarrow + boto3, laid out as Spark's partitioned writer
lays them out; the stats oracle is pyarrow.compute over the downloaded rows.
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tests.storage.moto_s3 import MotoS3
from txsql.engine.schema import table_schema
from txsql.engine.written_files import describe_written_files
from txsql.log.actions import Metadata
from txsql.storage import file_io_for

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "p", "type": "integer", "nullable": True, "metadata": {}},
    ],
}


def _parquet(ids: list[int], names: list[str | None]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": names}), sink)
    return sink.getvalue()


def test_part_files_become_adds_with_footer_stats(moto_s3: MotoS3, s3_bucket: str) -> None:
    root = f"s3://{s3_bucket}/t"
    client = moto_s3.client()
    files = {
        "w1/p=1/part-00000-a.c000.snappy.parquet": _parquet([3, 1, 2], ["c", None, "a"]),
        "w1/p=__HIVE_DEFAULT_PARTITION__/part-00001-a.c000.snappy.parquet": _parquet([9], ["z"]),
        "w1/_SUCCESS": b"",
    }
    for key, body in files.items():
        client.put_object(Bucket=s3_bucket, Key=f"t/{key}", Body=body)
    metadata = Metadata(id="w", schema_string=json.dumps(SCHEMA), partition_columns=("p",))
    schema = table_schema(SCHEMA, ("p",), "none")

    fs = file_io_for(root, moto_s3.options())
    adds = describe_written_files(fs, root, "w1", metadata, SCHEMA, schema)

    by_path = {a.path: a for a in adds}
    assert set(by_path) == {
        "w1/p=1/part-00000-a.c000.snappy.parquet",
        "w1/p=__HIVE_DEFAULT_PARTITION__/part-00001-a.c000.snappy.parquet",
    }
    assert "t/w1/_SUCCESS" not in moto_s3.keys(s3_bucket), "Spark's marker is removed"
    for path, add in by_path.items():
        body = files[path]
        assert add.size == len(body)
        assert add.partition_values == {"p": None if "HIVE" in path else "1"}
        rows = pq.read_table(io.BytesIO(body))
        stats = json.loads(add.stats or "{}")
        assert stats["numRecords"] == rows.num_rows
        assert stats["minValues"]["id"] == pc.min(rows["id"]).as_py()
        assert stats["maxValues"]["id"] == pc.max(rows["id"]).as_py()
        assert stats["nullCount"]["name"] == rows["name"].null_count
