"""Superscripts and subscripts keep their place as ``^`` and ``_``: NFKC alone reads "10³" as the
number 103, "x²" as the name x2 and "H₂O" as H2O.

From a hostile review (session 52): under the default normaliser, six distinct math texts were three
pairs of "identical" records: dedup dropped three of them (differs: none), leak --fail-on-overlap
failed on a training file holding none of the test questions, and clean kept nothing."""
from __future__ import annotations

import json
import unicodedata

from auditor.normalize import default, fold, script_marks

QUESTIONS = ["What is 10³ in total?", "What is 103 in total?", "Solve x² + 1 = 5", "Solve x2 + 1 = 5",
             "Use 2⁸ bits", "Use 28 bits", "Water is H₂O.", "Water is H2O."]


def test_every_superscript_and_subscript_is_marked_as_unicode_tags_it():
    """The table is the Unicode database's <super> and <sub> decompositions, and nothing else."""
    tagged = {chr(p) for p in range(0x110000) if unicodedata.decomposition(chr(p)).startswith(("<super>", "<sub>"))}
    marks = script_marks()
    assert set(marks) == tagged and len(tagged) > 200
    for char, written in marks.items():
        tag = unicodedata.decomposition(char)
        assert written == ("^" if tag.startswith("<super>") else "_") + unicodedata.normalize("NFKC", char)


def test_a_power_or_an_index_is_not_its_digits():
    keys = [default(q) for q in QUESTIONS]
    assert len(set(keys)) == len(QUESTIONS)
    assert default("What is 10³ in total?") == default("what is 10^3 in total?")
    assert fold("H₂O") == "h_2o" and fold("ｘ²") == "x^2"            # fullwidth still folds
    assert fold("plain ascii 103") == "plain ascii 103"


def test_dedup_leak_and_clean_tell_them_apart(run_cli, tmp_path):
    def write(name, texts):
        (tmp_path / name).write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts),
                                     encoding="utf-8")
    write("all.jsonl", QUESTIONS)
    write("train.jsonl", QUESTIONS[1::2])
    write("test.jsonl", QUESTIONS[0::2])
    code, _, err = run_cli("dedup", tmp_path / "all.jsonl", "--out", tmp_path / "kept.jsonl", "--quiet")
    assert code == 0, err
    assert len((tmp_path / "kept.jsonl").read_text(encoding="utf-8").splitlines()) == len(QUESTIONS)
    code, out, err = run_cli("leak", tmp_path / "train.jsonl", tmp_path / "test.jsonl", "--fail-on-overlap",
                             "--json", "-", "--quiet")
    assert code == 0, err
    assert json.loads(out)["identical_text"]["records"] == 0
    code, _, err = run_cli("clean", tmp_path / "test.jsonl", "--against", tmp_path / "train.jsonl",
                           "--out", tmp_path / "clean.jsonl", "--quiet")
    assert code == 0, err
    assert len((tmp_path / "clean.jsonl").read_text(encoding="utf-8").splitlines()) == 4
