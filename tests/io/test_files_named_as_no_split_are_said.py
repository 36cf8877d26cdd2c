"""A folder holding train.jsonl beside files named as no split (corpus_a.jsonl): the train split is
read and the others are left out, which a notice now says plainly. From a hostile review: 7 of 12
records went unread, said only as "available: corpus_a, corpus_b, train"."""
from __future__ import annotations

import json

import auditor


def _write(folder, name, text, count):
    (folder / f"{name}.jsonl").write_text("".join(json.dumps({"question": f"{text} {i}"}) + "\n"
                                                  for i in range(count)), encoding="utf-8")


def test_files_beside_a_split_that_name_no_split_are_said_left_out(tmp_path):
    _write(tmp_path, "corpus_a", "alpha one two three", 3)
    _write(tmp_path, "corpus_b", "beta one two three", 4)
    _write(tmp_path, "train", "gamma one two three", 5)
    table = auditor.load(str(tmp_path))
    assert len(table.rows) == 5 and table.split == "train"
    assert ("2 files named as no split (corpus_a, corpus_b) left out, beside the split files: give --split NAME to "
            "read one, or put the files to read together in a folder of their own") in table.notices
    named = auditor.load(str(tmp_path), split="corpus_a")            # asked for: read, and nothing to say
    assert len(named.rows) == 3 and not any("named as no split" in n for n in named.notices)


def test_split_files_alone_get_no_such_notice(tmp_path):
    _write(tmp_path, "train", "gamma one two three", 5)
    _write(tmp_path, "test", "delta one two three", 2)
    assert not any("named as no split" in n for n in auditor.load(str(tmp_path)).notices)


def test_files_of_a_format_not_read_are_said_left_out_but_documents_are_not(tmp_path):
    """From a hostile review: a folder's data.jsonlines or notes.txt was skipped without a word."""
    _write(tmp_path, "data", "alpha one two three", 3)
    (tmp_path / "more.jsonlines").write_text(json.dumps({"question": "beta one two"}) + "\n", encoding="utf-8")
    (tmp_path / "extra.txt.gz").write_bytes(b"")
    (tmp_path / "README.md").write_text("# data\n", encoding="utf-8")
    (tmp_path / "LICENSE.txt").write_text("MIT\n", encoding="utf-8")
    table = auditor.load(str(tmp_path))
    assert len(table.rows) == 3
    said = [n for n in table.notices if "in a format not read here" in n]
    assert said == ["2 file(s) in a format not read here left out (extra.txt.gz, more.jsonlines): read formats are "
                    ".jsonl, .json, .csv, .tsv and .parquet; rename one whose content is such a format (a .jsonlines "
                    "file is JSONL)"]


def test_a_file_named_as_no_split_that_is_read_is_not_said_left_out(tmp_path):
    """Only test.jsonl and other.jsonl: a training side's default (train) is missing, so the first
    split by name is read, other.jsonl; the notice must not call the file read left out."""
    _write(tmp_path, "test", "delta one two three", 2)
    _write(tmp_path, "other", "omega one two three", 4)
    table = auditor.load(str(tmp_path))
    assert len(table.rows) == 4 and table.split == "other"
    assert table.notices == ("split not given: using 'other' (available: other, test)",)
