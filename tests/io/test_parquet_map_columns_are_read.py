"""Parquet files with a map column (pandas' and Spark's MapType, Hive's map<string, string>)
are read: each row's map is its (key, value) pairs. Reading one was refused as "not a readable
Parquet file" (Arrow has no flatten for maps, which the reading budget's count of values used)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
import real_data
from auditor.io.formats import _arrow_values


QUESTIONS = [row["question"] for row in real_data.rows("gsm8k/test.jsonl")[:40]]


def _objects(value) -> int:
    """The Python objects of a to_pylist value, nested ones included (an independent count)."""
    if isinstance(value, (list, tuple)):
        return 1 + sum(map(_objects, value))
    if isinstance(value, dict):
        return 1 + sum(map(_objects, value.values()))
    return 1


def _table() -> pa.Table:
    # rows 0-9 repeated at 30-39: 10 identical questions; the map holds the row's split and source
    questions = QUESTIONS[:30] + QUESTIONS[:10]
    meta = [[("split", "test"), ("source", f"s{i % 3}")] if i % 7 else None for i in range(len(questions))]
    scores = [[("k", [i, i + 1])] if i % 5 else [] for i in range(len(questions))]
    return pa.table({"question": questions,
                     "meta": pa.array(meta, pa.map_(pa.string(), pa.string())),
                     "scores": pa.array(scores, pa.map_(pa.string(), pa.list_(pa.int64())))})


def test_a_parquet_map_column_is_read_and_scanned(tmp_path):
    """From the round-4 hostile review."""
    path = tmp_path / "with_map.parquet"
    pq.write_table(_table(), path, row_group_size=7)
    table = auditor.load(str(path))
    assert table.rows == _table().to_pylist()
    summary = auditor.scan(str(path)).summary()
    assert summary["input"]["records"] == 40
    assert summary["roles"]["text"] == "question"
    texts = [row["question"] for row in _table().to_pylist()]
    assert summary["exact_duplicates"]["text"]["redundant"] == len(texts) - len(set(texts)) == 10


def test_a_parquet_map_column_can_be_a_label_and_is_written_by_dedup(tmp_path, run_cli):
    """From the round-4 hostile review."""
    path = tmp_path / "with_map.parquet"
    pq.write_table(_table(), path)
    code, out, err = run_cli("scan", path, "--label", "meta", "--json", "-", "--quiet")
    assert code == 0, err
    assert json.loads(out)["roles"]["labels"] == ["meta"]
    code, _, err = run_cli("dedup", path, "--out", tmp_path / "kept.jsonl", "--quiet")
    assert code == 0, err
    kept = [json.loads(line) for line in (tmp_path / "kept.jsonl").read_text().splitlines()]
    assert [row["question"] for row in kept] == QUESTIONS[:30]
    assert kept[1]["meta"] == [["split", "test"], ["source", "s1"]]


@pytest.mark.parametrize("start,length", [(0, 40), (3, 11), (39, 1), (5, 0)])
def test_the_budget_counts_a_map_slice_as_to_pylist_makes_it(start, length):
    """From the round-4 hostile review: the count of values charged to the reading budget, for a
    batch that is a slice of the column (its offsets do not start at 0)."""
    for column in _table().columns:
        array = column.combine_chunks().slice(start, length)
        assert _arrow_values(array) == sum(map(_objects, array.to_pylist()))
