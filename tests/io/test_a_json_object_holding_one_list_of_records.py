"""From a hostile review: a JSON object holding its list of records beside other lists (the Hub
datasets-server's /rows answer, {"features": [...], "rows": [...], "num_rows_total": N}) was audited as
ONE record whose text joined every question (or refused as "lists of different lengths" when no single
value sat beside the lists). The records are now read from the list named as records, with a notice."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor import AuditorError
from auditor.io.shards import list_shards, open_shard, record_batches
from auditor.roles import resolve_roles

QUESTIONS = [f"what is the value of item number {i % 15} in the list" for i in range(20)]


def write(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def shard_records(path) -> list:
    """The records the Ray engine reads from the file (the same parser, on a stream)."""
    filesystem, [shard] = list_shards(str(path))
    return [r for batch in record_batches(open_shard(filesystem, shard), shard) for r in batch]


def test_rows_beside_a_count_and_features_are_the_records(tmp_path):
    path = write(tmp_path / "rows.json", {"count": 20, "features": [{"name": "question"}],
                                         "rows": [{"question": q} for q in QUESTIONS]})
    table = auditor.load(str(path))
    assert [r["question"] for r in table.rows] == QUESTIONS
    assert table.notices == ("rows.json: a JSON object holding a list of records beside other values: read the "
                             "records of 'rows' (20 records); count, features left out",)
    assert shard_records(path) == table.rows
    summary = auditor.scan(str(path)).summary()
    assert summary["input"]["records"] == 20 and summary["roles"]["text"] == "question"
    assert summary["exact_duplicates"]["text"]["redundant"] == 5


def test_rows_beside_features_alone_are_read_not_refused(tmp_path):
    # was: "the JSON object holds lists of different lengths ('features': 1, 'rows': 20)"
    path = write(tmp_path / "rows.json", {"features": [{"name": "question"}],
                                         "rows": [{"question": q} for q in QUESTIONS]})
    assert [r["question"] for r in auditor.load(str(path)).rows] == QUESTIONS


def test_the_datasets_server_answer_is_read_by_its_row_fields(tmp_path, run_cli):
    answer = {"features": [{"feature_idx": 0, "name": "question", "type": {"dtype": "string"}}],
              "rows": [{"row_idx": i, "row": {"question": q}, "truncated_cells": []} for i, q in enumerate(QUESTIONS)],
              "num_rows_total": 20, "partial": False}
    path = write(tmp_path / "dsserver.json", answer)
    table = auditor.load(str(path))
    assert [r["row"]["question"] for r in table.rows] == QUESTIONS
    assert "read the records of 'rows' (20 records); features, num_rows_total, partial left out" in table.notices[0]
    assert resolve_roles(table.rows).text == "row.question"
    assert shard_records(path) == table.rows
    out = tmp_path / "scan.json"
    code, _, err = run_cli("scan", path, "--json", out, "--quiet")
    assert code == 0, err
    summary = json.loads(out.read_text())
    assert summary["input"]["records"] == 20 and summary["exact_duplicates"]["text"]["redundant"] == 5
    # a /rows answer of one row beside several features: still the rows
    one = write(tmp_path / "one.json", dict(answer, features=answer["features"] * 3, rows=answer["rows"][:1]))
    assert auditor.load(str(one)).rows == answer["rows"][:1]


def test_the_datasets_server_answer_saved_as_jsonl_is_refused_naming_the_rows(tmp_path, run_cli):
    path = tmp_path / "rows.jsonl"          # curl's answer is one line
    write(path, {"features": [{"name": "question"}], "rows": [{"row": {"question": q}} for q in QUESTIONS]})
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "'rows' holds 20 records" in err and "name it .json" in err


def test_other_objects_keep_their_reading(tmp_path):
    rows = [{"question": q} for q in QUESTIONS[:3]]
    # an id beside the lists: one document of a folder, one record
    doc = {"id": 3, "rows": rows, "features": [{"name": "question"}]}
    assert auditor.load(str(write(tmp_path / "doc.json", doc))).rows == [doc]
    # no list named as records: lists of objects of one length stay columns
    columns = {"question": [{"en": "a"}, {"en": "b"}], "meta": [{"id": 1}, {"id": 2}]}
    assert auditor.load(str(write(tmp_path / "cols.json", columns))).rows == [
        {"question": {"en": "a"}, "meta": {"id": 1}}, {"question": {"en": "b"}, "meta": {"id": 2}}]
    # two lists named as records: which is meant is not guessed
    both = {"data": rows, "examples": rows[:2], "version": 1}
    assert auditor.load(str(write(tmp_path / "both.json", both))).rows == [both]
    # one list of records beside other values: read as before, without a notice
    table = auditor.load(str(write(tmp_path / "wrapped.json", {"version": 2, "data": rows})))
    assert table.rows == rows and table.notices == ()
    # one list per split stays refused
    with pytest.raises(AuditorError) as info:
        auditor.load(str(write(tmp_path / "splits.json", {"features": [{"name": "q"}], "train": rows,
                                                          "test": rows})))
    assert "one list per split" in info.value.message
