"""JSON Lines, JSON and CSV copies (dedup, clean) of a Parquet file write what JSON has no type for
as the audit read it: a binary column holding UTF-8 text as that text (the audit reads it as text),
a date or timestamp inside a struct as its text in a CSV cell too; binary data that is no text is
refused with the format that keeps it (.parquet), never written as Python's repr.

From the round-7 hostile review: the copies wrote bytes as "b'what is two plus two'" (the text
audited was "what is two plus two": the copy held other data than the one deduplicated), image bytes
as "b'\\x89PNG...'", and a CSV copy of a struct holding a timestamp ended in a traceback (exit 3).
Ground truth: pyarrow's reading of the input."""
from __future__ import annotations

import csv
import datetime
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import real_data

QUESTIONS = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:6]]
QUESTIONS = QUESTIONS + QUESTIONS[:2]          # rows 6 and 7 repeat rows 0 and 1: dedup drops them


def read_copy(path):
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("ext", [".jsonl", ".json", ".csv"])
def test_a_binary_column_of_text_is_copied_as_that_text(tmp_path, run_cli, ext):
    src = tmp_path / "binary.parquet"
    pq.write_table(pa.table({"question": pa.array([q.encode() for q in QUESTIONS], pa.binary()),
                             "answer": pa.array([str(i % 3) for i in range(len(QUESTIONS))])}), src)
    out = tmp_path / f"kept{ext}"
    rc, _, err = run_cli("dedup", src, "--out", out, "--quiet")
    assert rc == 0, err
    truth = [b.decode("utf-8") for b in pq.read_table(src).column("question").to_pylist()][:6]
    assert [r["question"] for r in read_copy(out)] == truth == QUESTIONS[:6]


def test_a_struct_holding_a_timestamp_is_a_json_cell_in_a_csv_copy(tmp_path, run_cli):
    src = tmp_path / "nested.parquet"
    when = [datetime.datetime(2020, 1, 1 + i) for i in range(len(QUESTIONS))]
    pq.write_table(pa.table({"question": QUESTIONS, "meta": [{"at": t, "n": i} for i, t in enumerate(when)]}), src)
    rc, _, err = run_cli("dedup", src, "--out", tmp_path / "kept.csv", "--quiet")
    assert rc == 0 and "Traceback" not in err, err
    rc, _, err = run_cli("dedup", src, "--out", tmp_path / "kept.jsonl", "--quiet")
    assert rc == 0, err
    cells = [json.loads(r["meta"]) for r in read_copy(tmp_path / "kept.csv")]
    assert cells == [r["meta"] for r in read_copy(tmp_path / "kept.jsonl")]
    assert cells == [{"at": str(t), "n": i} for i, t in enumerate(when[:6])]


@pytest.mark.parametrize("ext", [".jsonl", ".json", ".csv"])
def test_binary_data_that_is_no_text_is_refused_in_a_text_format(tmp_path, run_cli, ext):
    src = tmp_path / "images.parquet"
    png = [b"\x89PNG\r\n\x1a\n\x00\xff" + bytes([i]) for i in range(len(QUESTIONS))]
    pq.write_table(pa.table({"question": QUESTIONS, "image": pa.array(png, pa.binary())}), src)
    out = tmp_path / f"kept{ext}"
    rc, _, err = run_cli("dedup", src, "--out", out, "--quiet")
    assert rc == 2 and "Traceback" not in err, err
    assert "binary data that is not UTF-8 text" in err and ".parquet" in err
    assert not out.exists()
    rc, _, err = run_cli("dedup", src, "--out", tmp_path / "kept.parquet", "--quiet")
    assert rc == 0, err
    assert pq.read_table(tmp_path / "kept.parquet").column("image").to_pylist() == png[:6]
