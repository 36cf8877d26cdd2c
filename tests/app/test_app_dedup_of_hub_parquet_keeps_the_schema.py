"""The app's deduplicated file of a Hub split stored as Parquet (the dedup_file endpoint, as the
Downloads tab builds it) is a Parquet file made from the repo's own files at the commit audited:
their schema (nanosecond timestamps, uint64 past int64's range, decimal128, list<struct>,
dictionary) kept, where the JSONL written from the streamed values lost it. Ground truth:
tests/typed_parquet.py (the files read back with pyarrow, less the texts pandas finds duplicated)."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from typed_parquet import THRESHOLD, expected, source

pytest_plugins = ["app_server"]


def test_the_dedup_file_of_a_hub_parquet_split_keeps_its_schema(client):
    out, _ = client.predict("acme/typed", "", "train", None, "text", "", float(THRESHOLD), "first",
                            api_name="/dedup_file")
    assert Path(out).suffix == ".parquet", out
    copy = pq.read_table(out)
    assert copy.schema.equals(source().schema, check_metadata=True)
    assert copy.equals(expected())
