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
