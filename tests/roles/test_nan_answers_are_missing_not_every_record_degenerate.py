"""NaN (pandas' missing value: a float column with gaps in CSV, Parquet or JSON's NaN) is a missing
value of that record only; a field with no value in any record is not guessed as a role, and one
named is said to leave every record degenerate. From the round-4 hostile review (a column of JSON
NaN was guessed as the answer: every record degenerate, without a word)."""
from __future__ import annotations

import json
import math

import pandas as pd

import auditor

QUESTIONS = ["What is two plus two here", "Name the capital city of France", "What colour is the sky at noon",
             "Who wrote the play Hamlet once"]


def _scan(path, **roles) -> dict:
    return auditor.scan(str(path), **roles).summary()


def test_nan_in_some_records_is_missing_for_those_records_only(tmp_path):
    frame = pd.DataFrame({"question": QUESTIONS, "answer": [4.0, math.nan, 2.5, 1.0]})
    paths = [tmp_path / "gaps.csv", tmp_path / "gaps.parquet", tmp_path / "gaps.jsonl"]
    frame.to_csv(paths[0], index=False)
    frame.to_parquet(paths[1])
    paths[2].write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")), encoding="utf-8")
    assert "NaN" in paths[2].read_text()          # json.dumps writes pandas' NaN as JSON's NaN
    for path in paths:
        summary = _scan(path)
        assert summary["roles"]["answer"] == "answer", path
        assert summary["degenerate"] == {"records": 1, "by_role": {"text": 0, "answer": 1}, "rows_sample": [1]}
        assert summary["input"]["notices"] == []


def test_a_field_of_nan_in_every_record_is_not_guessed(tmp_path):
    frame = pd.DataFrame({"question": QUESTIONS, "answer": [math.nan] * 4})
    paths = [tmp_path / "none.csv", tmp_path / "none.parquet", tmp_path / "none.jsonl"]
    frame.to_csv(paths[0], index=False)        # empty cells
    frame.to_parquet(paths[1])
    paths[2].write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")), encoding="utf-8")
    for path in paths:
        summary = _scan(path)
        assert summary["roles"]["answer"] is None, path
        assert summary["degenerate"]["records"] == 0


def test_a_named_field_empty_in_every_record_is_said(tmp_path, run_cli):
    path = tmp_path / "nan.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": math.nan, "topic": [math.nan]}) + "\n"
                            for q in QUESTIONS), encoding="utf-8")
    summary = _scan(path, answer="answer", group="topic")
    assert summary["degenerate"]["records"] == 4
    notices = summary["input"]["notices"]
    assert len(notices) == 2 and all("in every record: every record counts as degenerate" in n for n in notices)
    assert "'answer' (named)" in notices[0] and "'topic' (named)" in notices[1]
    rc, out, err = run_cli("scan", path, "--answer", "answer", "--quiet")
    assert rc == 0, err
    assert "> Note: the answer field 'answer' (named) is missing, null, NaN or blank in every record" in out
