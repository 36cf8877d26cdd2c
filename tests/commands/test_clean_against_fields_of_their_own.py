"""``clean`` when TEST and its training sides name their fields differently (a test CSV's "q", a
train JSONL's "question", neither guessed for the other): ``--text-against`` / ``--answer-against``
name the training sides' own fields. ``--text`` named both sides' text, so such a pair could not be
cleaned at all ("a.jsonl: The text field 'q' is in no record"). And ``--out`` naming a folder says
so, as every other output does (it said "unknown extension")."""
from __future__ import annotations

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq

from auditor.clean import clean
from definitions import norm_default, read_jsonl


def _sides(real_data, tmp_path):
    """GSM8K train as Parquet ("problem", "solution"); the first 200 test questions as a CSV ("q", "a")
    with 25 train questions copied in (every fourth row from 0, each under the test answer)."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")
    test = read_jsonl(real_data / "gsm8k/test.jsonl")[:200]
    pq.write_table(pa.table({"problem": [r["question"] for r in train], "solution": [r["answer"] for r in train]}),
                   tmp_path / "train.parquet")
    rows = [{"q": r["question"], "a": r["answer"]} for r in test]
    for k in range(25):
        rows[4 * k]["q"] = train[100 + k]["question"]
    with open(tmp_path / "test.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["q", "a"])
        writer.writeheader()
        writer.writerows(rows)
    train_texts = {norm_default(r["question"]) for r in train}
    leaked = [i for i, r in enumerate(rows) if norm_default(r["q"]) in train_texts]
    return tmp_path / "train.parquet", tmp_path / "test.csv", rows, leaked


def test_clean_reads_the_training_sides_by_their_own_field_names(real_data, tmp_path, run_cli):
    """From the round-4 hostile review."""
    train, test, rows, leaked = _sides(real_data, tmp_path)
    assert len(leaked) == 25
    out = tmp_path / "test.clean.jsonl"
    code, _, err = run_cli("clean", test, "--against", train, "--text", "q", "--out", out, "--quiet")
    assert code == 2 and "train.parquet: The text field 'q' is in no record" in err
    code, _, err = run_cli("clean", test, "--against", train, "--text", "q", "--text-against", "problem",
                           "--out", out, "--quiet")
    assert code == 0, err
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == [r for i, r in enumerate(rows) if i not in set(leaked)]
    report = json.loads((tmp_path / "test.clean.jsonl.dropped.json").read_text(encoding="utf-8"))
    assert report["dropped"] == 25 and [d["row"] for d in report["dropped_rows"]] == leaked
    assert [d["matches"] for d in report["dropped_rows"]] == [[100 + k] for k in range(25)]


def test_clean_answer_against_names_the_training_answer(real_data, tmp_path):
    """From the round-4 hostile review: in Python, as text_against= and answer_against=."""
    train, test, rows, leaked = _sides(real_data, tmp_path)
    result = clean(str(test), [str(train)], text="q", answer="a", text_against="problem", answer_against="solution")
    assert [d["row"] for d in result.dropped] == leaked
    assert result.kept == [r for i, r in enumerate(rows) if i not in set(leaked)]


def test_clean_out_naming_a_folder_says_it_is_a_folder(real_data, tmp_path, run_cli):
    """From the round-4 hostile review."""
    train, test, _, _ = _sides(real_data, tmp_path)
    (tmp_path / "cleaned").mkdir()
    code, _, err = run_cli("clean", test, "--against", train, "--text", "q", "--text-against", "problem",
                           "--out", tmp_path / "cleaned", "--quiet")
    assert code == 2 and "is a folder, not a file" in err
    assert list((tmp_path / "cleaned").iterdir()) == []
