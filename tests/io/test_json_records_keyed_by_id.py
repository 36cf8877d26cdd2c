"""A JSON object of records keyed by their ids ({"gsm8k_0": {"question": ...}, "gsm8k_1": {...}}:
``json.dump`` of a dict of records, pandas' orient="index" of a frame indexed by ids) is read as
one record per key, with a notice. It was one record whose text could only be one record's field
(the error suggested --text gsm8k_0.question: an audit of one question); so is such an object under
"data" ({"version": ..., "data": {...}}), as a list of records there is."""
from __future__ import annotations

import json

import pandas as pd

import auditor
import real_data
from auditor.leakage import leak


TEST = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/test.jsonl")[:60]]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_records_keyed_by_id_are_read_one_per_key(tmp_path):
    """From the round-4 hostile review."""
    rows = TEST + TEST[:5]                     # 5 questions twice
    path = tmp_path / "keyed.json"
    path.write_text(json.dumps({f"gsm8k_test_{i}": row for i, row in enumerate(rows)}), encoding="utf-8")
    summary = auditor.scan(str(path)).summary()
    assert summary["input"]["records"] == len(rows) == 65
    assert summary["roles"]["text"] == "question" and summary["roles"]["answer"] == "answer"
    assert summary["exact_duplicates"]["text"]["redundant"] == len(rows) - len({r["question"] for r in rows}) == 5
    notice, = summary["input"]["notices"]
    assert "65 objects keyed by id ('gsm8k_test_0', 'gsm8k_test_1', 'gsm8k_test_2' ...)" in notice


def test_pandas_orient_index_with_string_ids_leaks_every_record(tmp_path):
    """From the round-4 hostile review: pandas' index layout with a string index, as the integer one is read."""
    frame = pd.DataFrame(TEST, index=[f"test/{i}" for i in range(len(TEST))])
    path = tmp_path / "frame.json"
    frame.to_json(path, orient="index")
    assert auditor.load(str(path)).rows == TEST
    got = leak(_write_jsonl(tmp_path / "train.jsonl", TEST[::2]), path).summary()
    assert got["b"]["records"] == 60
    assert got["identical_both"]["records"] == len(TEST[::2]) == 30


def test_one_record_with_nested_objects_stays_one_record(tmp_path):
    """From the round-4 hostile review: keys without a digit are field names, not ids."""
    record = {"question": {"en": TEST[0]["question"], "fr": "Combien?"}, "answer": {"en": "18", "fr": "18"}}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [record] and not table.notices
    summary = auditor.scan(str(path), text="question.en").summary()
    assert summary["input"]["records"] == 1


def test_records_keyed_by_id_inside_a_data_object_are_read_one_per_key(tmp_path):
    """From the round-4 hostile review: {"version": ..., "data": {"id": {...}}}, as {"data": [...]} is read."""
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"version": "1.0", "data": {f"q{i}": row for i, row in enumerate(TEST)}}),
                    encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == TEST and len(table.notices) == 1
    # under another key than a container's name, the object is one record's field
    path.write_text(json.dumps({"version": "1.0", "meta": {f"q{i}": row for i, row in enumerate(TEST[:3])}}),
                    encoding="utf-8")
    assert len(auditor.load(str(path)).rows) == 1
