"""A Hub dataset stored as Parquet with the types a value rebuilt in Python loses: a nanosecond
timestamp, uint64 past int64's range, decimal128, list<struct> and a dictionary; two files of
several row groups, duplicated texts within and across them. The Parquet copy tests serve it from
the fake Hub (tests/hub_server.py); ``expected`` is their ground truth: the files read back with
pyarrow, less the texts pandas finds duplicated."""
from __future__ import annotations

import io
import random
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import real_data

QUESTIONS = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")[:45]]
# 45 distinct questions and 15 copies of some of them, shuffled: duplicates within each file and across them
TEXTS = [QUESTIONS[k] for k in range(45)] + [QUESTIONS[k] for k in (3, 7, 7, 20, 44, 0, 31, 12, 12, 40, 5, 28, 33,
                                                                        9, 1)]
random.Random(7).shuffle(TEXTS)
SCHEMA = pa.schema([
    ("text", pa.string()),
    ("at", pa.timestamp("ns")),
    ("big", pa.uint64()),
    ("price", pa.decimal128(38, 12)),
    ("parts", pa.list_(pa.struct([("k", pa.string()), ("n", pa.int16())]))),
    ("tag", pa.dictionary(pa.int32(), pa.string())),
])
FIRST_FILE_ROWS = 32
CAP = 40            # a row cap past the first file's end
THRESHOLD = "0.9"


def table_of(lo: int, hi: int) -> pa.Table:
    rows = range(lo, hi)
    return pa.table({
        "text": TEXTS[lo:hi],
        # nanoseconds a microsecond clock cannot hold; 2**63 and more: no int64 holds them
        "at": pa.array([1_700_000_000_000_000_000 + i * 1_000_000_007 + 1 for i in rows], pa.timestamp("ns")),
        "big": pa.array([2 ** 64 - 1 if i == 0 else 2 ** 63 + i * 977 + 5 for i in rows], pa.uint64()),
        "price": pa.array([Decimal(f"{12345678901234567890 + i}.{i:012d}") for i in rows], pa.decimal128(38, 12)),
        "parts": [[{"k": f"p{i}-{j}", "n": i * 10 + j} for j in range(i % 3)] for i in rows],
        "tag": pa.array([f"kind {i % 4}" for i in rows]).dictionary_encode(),
    }, schema=SCHEMA)


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=10)
    return buf.getvalue()


FILES = {"data/train-00000-of-00002.parquet": parquet_bytes(table_of(0, FIRST_FILE_ROWS)),
         "data/train-00001-of-00002.parquet": parquet_bytes(table_of(FIRST_FILE_ROWS, len(TEXTS)))}
LEAKED = [QUESTIONS[k] for k in (2, 7, 30, 44)]        # the training side clean drops them against


# The same rows in five files a README lists out of name order: datasets reads z/b.parquet, then
# a/*.parquet's matches sorted as names (a/10 before a/9), whatever order they were written in.
LISTED_README = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: [z/b.parquet, "a/*.parquet"]
---
"""
LISTED = {"z/b.parquet": parquet_bytes(table_of(0, 10)), "a/y.parquet": parquet_bytes(table_of(10, 20)),
          "a/x.parquet": parquet_bytes(table_of(20, 30)), "a/9.parquet": parquet_bytes(table_of(30, 45)),
          "a/10.parquet": parquet_bytes(table_of(45, len(TEXTS)))}
LISTED_ORDER = ["z/b.parquet", "a/10.parquet", "a/9.parquet", "a/x.parquet", "a/y.parquet"]


def source(files=None, order=None) -> pa.Table:
    """The split as stored: its files (default ``FILES``, in shard order) one after another."""
    files = FILES if files is None else files
    return pa.concat_tables([pq.read_table(io.BytesIO(files[name])) for name in order or sorted(files)])


def expected(first: int | None = None, drop_texts=(), table: pa.Table | None = None) -> pa.Table:
    """The first ``first`` rows (all without) of ``table`` (default ``source()``), less each text seen
    before (pandas) and ``drop_texts``."""
    table = source() if table is None else table
    table = table.slice(0, first) if first else table
    texts = pd.Series(table.column("text").to_pylist())
    keep = ~texts.duplicated(keep="first") & ~texts.isin(list(drop_texts))
    assert keep.sum() < len(texts)           # the copy must drop something for the test to say anything
    return table.filter(pa.array(keep.to_numpy()))
