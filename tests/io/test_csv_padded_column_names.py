"""A CSV header written by hand with spaces around its names ("question, answer") is read by the
names without them, with a notice. " answer" was never guessed as the answer (a leak of every
test record counted no shared answer), and no --text could name " question " (role names are
stripped), so the field could only be guessed."""
from __future__ import annotations

import csv
import io
import json

import auditor
import real_data
from auditor.leakage import leak


TEST = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/test.jsonl")[:80]]


def _padded_csv(path, rows):
    body = io.StringIO()
    csv.writer(body, lineterminator="\n").writerows([r["question"], r["answer"]] for r in rows)
    path.write_text(" question ,  answer\n" + body.getvalue(), encoding="utf-8")
    return path


def test_padded_csv_names_are_read_without_their_spaces(tmp_path):
    """From the round-4 hostile review."""
    path = _padded_csv(tmp_path / "test.csv", TEST)
    table = auditor.load(str(path))
    assert table.rows == TEST
    assert table.notices == ("test.csv: column names with spaces around them, read without: 'question', 'answer'",)
    summary = auditor.scan(str(path), text="question", answer="answer").summary()
    assert summary["input"]["records"] == 80 and summary["roles"]["answer"] == "answer"


def test_a_leak_from_a_padded_csv_counts_shared_answers(tmp_path):
    """From the round-4 hostile review: the answer is guessed, so text AND answer matches count."""
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in TEST[:50]), encoding="utf-8")
    got = leak(str(train), str(_padded_csv(tmp_path / "test.csv", TEST))).summary()
    assert got["b"]["roles"]["answer"] == "answer"
    assert got["identical_text"]["records"] == got["identical_both"]["records"] == 50


def test_unpadded_and_blank_names_are_read_as_before(tmp_path):
    """From the round-4 hostile review: no notice without padding; a blank name is still 'Unnamed: N'."""
    path = tmp_path / "plain.csv"
    path.write_text("question,answer,  \nWhat is one plus one,2,x\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [{"question": "What is one plus one", "answer": "2", "Unnamed: 2": "x"}]
    assert not any("spaces around" in notice for notice in table.notices)
