"""Loaded records are held packed (``io.table.PackedRows``: each record's pickle in one buffer,
decoded when read), never all as dicts: the rows read back equal the records parsed independently
(json, csv, pyarrow), in order, whatever the format, the row cap or the number of files; they
index, slice and iterate as a list does; and they cost about their bytes, not the 4.4 times of
8-word records held as dicts (issue 34, item 2)."""
from __future__ import annotations

import csv
import datetime
import json
import pickle
import random

import pyarrow as pa
import pyarrow.parquet as pq

import auditor
from auditor.io.table import PackedRows, select


def records(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "ζeta", "eta", "theta"]
    return [{"text": " ".join(rng.choices(words, k=8)), "answer": str(i % 7), "n": i,
             **({"extra": [1, {"x": None}]} if i % 5 == 0 else {})} for i in range(n)]


def test_jsonl_rows_equal_the_parsed_lines_and_act_as_a_list(tmp_path):
    rows = records(10_000)
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    expected = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    got = auditor.load(str(path)).rows
    assert isinstance(got, PackedRows) and len(got) == len(expected)
    assert got == expected and list(got) == expected
    assert got[0] == expected[0] and got[-1] == expected[-1] and got[4097] == expected[4097]
    assert got[10:20] == expected[10:20] and got[::-1][:3] == expected[::-1][:3] and got[5:2] == []
    assert select(got, [9_999, 0, 5]) == [expected[9_999], expected[0], expected[5]]
    assert [r for _, batch in got.batches(10_000) for r in batch] == expected
    got[0]["text"] = "changed"                      # a decoded record is a copy: the rows stay as read
    assert got[0] == expected[0]
    assert pickle.loads(pickle.dumps(got)) == expected
    # Held packed: the buffer and its offsets cost about the file's bytes (dicts cost over 4 times).
    assert len(got._data) + got._ends.itemsize * len(got) < 2 * path.stat().st_size


def test_a_row_cap_and_several_files_keep_the_records_in_order(tmp_path):
    rows = records(3_000)
    folder = tmp_path / "data"
    folder.mkdir()
    for k in range(3):
        (folder / f"part-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[k * 1000:(k + 1) * 1000]))
    whole = auditor.load(str(folder))
    assert whole.rows == rows and not whole.truncated
    capped = auditor.load(str(folder), max_rows=1_500)
    assert capped.rows == rows[:1_500] and capped.truncated and len(capped.rows) == 1_500
    one = auditor.load(str(folder / "part-0.jsonl"), max_rows=10)
    assert one.rows == rows[:10] and one.truncated


def test_csv_and_parquet_values_come_back_as_read(tmp_path):
    rows = records(500)
    path = tmp_path / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["text", "answer"])
        writer.writeheader()
        writer.writerows({"text": r["text"], "answer": r["answer"]} for r in rows)
    with open(path, newline="", encoding="utf-8") as f:
        assert auditor.load(str(path)).rows == list(csv.DictReader(f))
    days = [datetime.date(2020, 1, 1 + i % 28) for i in range(500)]
    table = pa.table({"text": [r["text"] for r in rows], "day": days, "blob": [bytes([i % 256]) for i in range(500)]})
    pq.write_table(table, tmp_path / "t.parquet")
    got = auditor.load(str(tmp_path / "t.parquet")).rows
    assert got == table.to_pylist() and isinstance(got[3]["day"], datetime.date) and got[3]["blob"] == b"\x03"


def test_a_scan_of_packed_rows_equals_a_scan_of_the_same_records_as_a_list(tmp_path):
    rows = records(2_000)
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    packed = auditor.scan(str(path), text="text", answer="answer")
    listed = auditor.scan(auditor.Table(rows=[json.loads(json.dumps(r)) for r in rows], source="train.jsonl"),
                          text="text", answer="answer")
    assert packed.fingerprint == listed.fingerprint
    assert packed.fields.text == listed.fields.text and packed.fields.answer == listed.fields.answer
    assert packed.exact["answer"] == listed.exact["answer"] and packed.exact["answer"].groups == 7


def test_a_prepared_side_holds_each_text_once_and_gives_every_record_back(tmp_path):
    """The text role's values are packed as None and filled back from the text column on decode
    (a long text was held twice: in the pickle and as the column's string); a record whose text
    field is not a string, a nested text, and the key order all come back as read."""
    from auditor.prepare import prepare

    rng = random.Random(3)
    rows = [{"id": i, "text": " ".join(rng.choices(["alpha", "beta", "gamma"], k=2_000)), "answer": str(i % 3)}
            for i in range(300)]
    rows[7]["text"], rows[8]["text"], rows[9]["text"] = 12, None, ["a", "b"]   # read as text, kept packed
    del rows[10]["text"]
    rows[11] = {"text": "first", **{k: v for k, v in rows[11].items() if k != "text"}}   # another key order
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    expected = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    loaded = auditor.load(str(path)).rows
    side = prepare(str(path), text="text", answer="answer")
    got = side.table.rows
    assert isinstance(got, PackedRows) and got == expected and side.table.rows == loaded
    assert [list(r) for r in got] == [list(r) for r in expected]                       # key order
    assert got[11] == expected[11] and got[-1] == expected[-1] and got[5:9] == expected[5:9]
    assert select(got, [9, 0, 299]) == [expected[9], expected[0], expected[299]]
    assert got[:12] == expected[:12] and pickle.loads(pickle.dumps(got)) == expected
    assert side.fields.text[7] == "12" and side.fields.text[9] == "a b" and side.fields.text[10] is None
    # Each text held once: the packed records are a small part of the texts' bytes.
    assert len(got._data) < 0.05 * sum(len(t) for t in side.fields.text if t)
    # Prepared again (a prepared side's table is reused), the records still come back whole.
    again = prepare(side.table, text="text")
    assert again.table.rows == expected and again.fingerprint != "" and again.fields.text == side.fields.text


def test_a_wide_parquet_copy_decodes_each_record_a_few_times(tmp_path, monkeypatch):
    """From the session-41 review: writing packed records to Parquet decoded every record once per
    column (2,000 records of 200 fields: 7.5 s, against 0.5 s from a list). Now once per group of
    columns, and the file equals the one written from the records as a list."""
    from auditor.io import table as table_module
    from auditor.io.copies import PARQUET_COLUMN_GROUP, write_rows
    from auditor.io.table import packed
    rows = [{f"f{k}": (i * k if k % 3 else f"v{i}-{k}") for k in range(300)} for i in range(500)]
    write_rows(rows, tmp_path / "from_list.parquet")
    rows_packed = packed([[dict(r) for r in rows]])
    decodes = []
    real_loads = table_module.pickle.loads
    monkeypatch.setattr(table_module.pickle, "loads", lambda blob: decodes.append(1) or real_loads(blob))
    write_rows(rows_packed, tmp_path / "from_packed.parquet")
    passes = 1 + -(-300 // PARQUET_COLUMN_GROUP)            # the column names, then each group
    assert len(decodes) == passes * len(rows)
    assert pq.read_table(tmp_path / "from_packed.parquet").equals(pq.read_table(tmp_path / "from_list.parquet"))
    assert pq.read_table(tmp_path / "from_list.parquet").to_pylist() == rows
