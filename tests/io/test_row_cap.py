"""The row cap (--max-rows): reading stops at it in every format and across files, and the
report says the data was cut."""
from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
from auditor import AuditorError


ROWS = [
    {"question": "What is one plus one", "answer": "2", "code": "007"},
    {"question": "Name the capital of Italy", "answer": "Rome", "code": "010"},
    {"question": "How many days are in a week", "answer": "7", "code": "0"},
    {"question": "Spell the word cat, please", "answer": "c-a-t", "code": "00"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows, delimiter=",") -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_parquet(path: Path, rows) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def make_format(tmp_path: Path, fmt: str) -> Path:
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "d.jsonl", ROWS)
    if fmt == "ndjson":
        return write_jsonl(tmp_path / "d.ndjson", ROWS)
    if fmt == "json-list":
        p = tmp_path / "d.json"
        p.write_text(json.dumps(ROWS, indent=1), encoding="utf-8")
        return p
    if fmt == "json-columns":
        p = tmp_path / "d.json"
        p.write_text(json.dumps({k: [r[k] for r in ROWS] for k in ROWS[0]}), encoding="utf-8")
        return p
    if fmt == "json-data-key":
        p = tmp_path / "d.json"
        p.write_text(json.dumps({"data": ROWS}), encoding="utf-8")
        return p
    if fmt == "csv":
        return write_csv(tmp_path / "d.csv", ROWS)
    if fmt == "tsv":
        return write_csv(tmp_path / "d.tsv", ROWS, delimiter="\t")
    if fmt == "parquet":
        return write_parquet(tmp_path / "d.parquet", ROWS)
    raise ValueError(fmt)


def _parquet(rows) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=100)
    return buf.getvalue()


def _csv(rows) -> bytes:
    return ("text,answer\n" + "".join(f"{r['text']},{r['answer']}\n" for r in rows)).encode()


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("fmt", ["jsonl", "json-list", "csv", "parquet"])
def test_max_rows_truncation_is_reported(tmp_path, fmt):
    path = make_format(tmp_path, fmt)
    capped = auditor.load(str(path), max_rows=3)
    assert capped.rows == ROWS[:3]
    assert capped.truncated is True and capped.row_cap == 3
    exact_fit = auditor.load(str(path), max_rows=4)         # the cap equals the size: nothing cut
    assert exact_fit.rows == ROWS and exact_fit.truncated is False
    assert auditor.load(str(path), max_rows=100).truncated is False


def test_max_rows_in_summary_and_report(real_data):
    result = auditor.scan(str(real_data / "gsm8k" / "train.jsonl"), max_rows=500)
    assert result.records == 500
    assert result.table.truncated is True
    s = result.summary()
    assert s["input"]["truncated"] is True and s["input"]["row_cap"] == 500
    md = result.markdown()
    assert "Row cap" in md and "500" in md
    full = auditor.scan(str(real_data / "humaneval" / "HumanEval.jsonl"), max_rows=164)
    assert full.summary()["input"]["truncated"] is False
    assert "Row cap" not in full.markdown()


def test_max_rows_across_files_and_examples(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    write_jsonl(d / "a.jsonl", ROWS[:2])
    write_jsonl(d / "b.jsonl", ROWS[2:])
    assert auditor.load(str(d), max_rows=2).truncated is True
    assert auditor.load(str(d), max_rows=3).rows == ROWS[:3]
    assert auditor.load(str(d), max_rows=4).truncated is False
    ex = auditor.load("example:gsm8k", split="test", max_rows=10)
    assert len(ex.rows) == 10 and ex.truncated is True


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10"])
def test_bad_max_rows(tmp_path, bad):
    path = make_format(tmp_path, "jsonl")
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path), max_rows=bad)
    assert info.value.code == "usage"


def test_a_row_cap_stops_reading_for_every_format(tmp_path, monkeypatch):
    """From the hostile-input review: Files far beyond the byte budget: read whole they are refused; with a
    small row cap only
    their first rows are read, so the budget is never reached (JSONL, JSON list, CSV, Parquet)."""
    from auditor.io import budget, sources
    rows = [{"text": f"row {i} " + "filler words " * 20, "answer": str(i)} for i in range(20_000)]
    files = {"big.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode(),
             "big.jsonl.gz": gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), 1),
             "big.json": json.dumps(rows).encode(), "big.csv": _csv(rows), "big.parquet": _parquet(rows)}
    monkeypatch.setattr(budget, "MAX_BYTES", 1_000_000)
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(AuditorError) as info:
            auditor.load(str(path))
        assert info.value.code == "too_large" and "AUDITOR_MAX_BYTES" in info.value.message, name
        table = auditor.load(str(path), max_rows=10)
        assert len(table.rows) == 10 and table.truncated and table.rows[9]["answer"] == "9", name


def test_row_cap_smaller_than_the_data_is_stated(tmp_path):
    """From the odd-inputs review."""
    path = write_jsonl_str(tmp_path / "many.jsonl", [{"text": f"record number {i}"} for i in range(100)])
    result = auditor.scan(path, max_rows=30)
    summary = result.summary()
    assert summary["input"]["records"] == 30 and summary["input"]["truncated"] is True
    assert "Row cap" in result.markdown()
    assert auditor.scan(path, max_rows=100).summary()["input"]["truncated"] is False
