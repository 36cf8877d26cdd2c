"""``clean`` with a training side that holds the same records as TEST (the same file given twice, a
copy of it, or the evaluation split named as the training side) says so: every record matches
itself, so the copy is empty, and that says nothing about leakage. ``leak`` warns in that case; clean
wrote an empty copy and exited 0 without a word (with --quiet, nothing at all), which a pipeline
then took as the cleaned evaluation set.

From the round-7 hostile review: ``auditor clean test.jsonl --against test.jsonl --out c.jsonl``
wrote 0 of 1,319 rows, silently. Ground truth: the sides' record fingerprints (``auditor.leak``),
and GSM8K's real train split, which shares no record with its test split (no notice then)."""
from __future__ import annotations

import shutil
from pathlib import Path

import auditor
from auditor.clean import clean
from definitions import write_jsonl

NOTICE = "holds the same records as TEST"


def test_the_same_file_as_test_and_training_side_is_said(real_data, run_cli, tmp_path):
    test = real_data / "gsm8k/test.jsonl"
    code, _, err = run_cli("clean", test, "--against", test, "--out", tmp_path / "c.jsonl", "--quiet")
    assert code == 0, err
    assert (tmp_path / "c.jsonl").read_text() == ""                    # every record matched itself
    assert f"note: {test.name} {NOTICE}" in err, err


def test_a_copy_among_other_training_sides_is_named(real_data, tmp_path):
    test = real_data / "gsm8k/test.jsonl"
    copy = Path(shutil.copy(test, tmp_path / "copy.jsonl"))
    train = real_data / "gsm8k/train.jsonl"
    same = auditor.leak(str(copy), str(test))
    assert same.a.fingerprint == same.b.fingerprint                      # ground truth: the same records
    result = clean(str(test), [str(train), str(copy)])
    assert [n for n in result.notices if NOTICE in n] == [f"{copy.name} {NOTICE}: every record matches itself, so "
                                                          "it drops them all and says nothing about leakage. "
                                                          "Clean the evaluation split against the training one."]


def test_a_real_training_side_gives_no_such_notice(real_data, tmp_path):
    test, train = real_data / "gsm8k/test.jsonl", real_data / "gsm8k/train.jsonl"
    sides = auditor.leak(str(train), str(test))
    assert sides.a.fingerprint != sides.b.fingerprint
    result = clean(str(test), [str(train)])
    assert not [n for n in result.notices if NOTICE in n]
    assert result.records == 1319 and len(result.kept) == 1319 - len(result.dropped)


def test_the_same_records_under_other_fields_are_no_copy(tmp_path):
    """A training side whose records are TEST's but whose text field is another one is compared on
    its own fields: not the same records as compared, so no notice (fingerprints cover the roles)."""
    rows = [{"q": f"question number {i} about apples", "p": f"other text {i} entirely"} for i in range(20)]
    write_jsonl(tmp_path / "t.jsonl", rows)
    result = clean(str(tmp_path / "t.jsonl"), [str(tmp_path / "t.jsonl")], text="q", text_against="p")
    assert not [n for n in result.notices if NOTICE in n] and result.dropped == []
