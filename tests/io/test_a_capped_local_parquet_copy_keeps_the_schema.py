"""A dedup copy of local Parquet files read with a row cap is the first rows as stored, less the
dropped ones: the source's schema kept (nanosecond timestamps, uint64 past int64, decimal128,
list<struct>, dictionary), as an uncapped copy and a Hub split's capped copy are.

From the session-47 review of the Hub Parquet copies: a capped local read was still written anew from
Python values, so `--max-rows` changed the copy's column types."""
from __future__ import annotations

import pyarrow.parquet as pq

import typed_parquet as tp


def test_a_capped_copy_is_the_first_rows_as_stored(tmp_path, run_cli):
    folder = tmp_path / "split"
    folder.mkdir()
    for name, data in tp.FILES.items():
        (folder / name.split("/")[-1]).write_bytes(data)
    out = tmp_path / "copy.parquet"
    rc, _, err = run_cli("dedup", str(folder / "*.parquet"), "--text", "text", "--threshold", tp.THRESHOLD,
                         "--out", out, "--manifest", tmp_path / "dropped.jsonl", "--max-rows", str(tp.CAP))
    assert rc == 0, err
    copy, want = pq.read_table(out), tp.expected(first=tp.CAP)
    assert copy.schema.equals(tp.SCHEMA) and copy.schema.equals(want.schema)
    assert copy.equals(want)
