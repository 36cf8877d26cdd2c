"""Schema field types name the data's types, not Python's classes: a Parquet decimal, timestamp,
date or binary column read as "Decimal", "Timestamp", "bytes" beside "string" and "integer". From
a hostile review (cosmetic: summary.json's schema.fields)."""
import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq

import auditor


def test_parquet_columns_beyond_json_get_data_type_names(tmp_path):
    n = 4
    table = pa.table({"text": [f"record number {i} with words" for i in range(n)],
                      "price": pa.array([decimal.Decimal(f"{i}.25") for i in range(n)], pa.decimal128(10, 2)),
                      "at": pa.array([datetime.datetime(2024, 1, i + 1) for i in range(n)], pa.timestamp("us")),
                      "day": pa.array([datetime.date(2024, 1, i + 1) for i in range(n)], pa.date32()),
                      "blob": pa.array([bytes([i]) for i in range(n)], pa.binary())})
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path)
    fields = auditor.scan(str(path), text="text").summary()["schema"]["fields"]
    assert {f["name"]: f["type"] for f in fields} == {"text": "string", "price": "decimal", "at": "timestamp",
                                                      "day": "date", "blob": "binary"}
