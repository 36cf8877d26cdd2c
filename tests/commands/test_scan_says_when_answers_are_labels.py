"""REPORT.md says when a few answer values hold the whole answer column (multiple-choice letters,
labels): their exact duplicates are expected, not copies. From a real-data review (session 52): MMLU's
A-D answers read as "98% redundant answers" with nothing to tell a reader that this is no finding."""
from __future__ import annotations

import json
import random

import auditor
import real_data

NOTE = "distinct answer values are shared by most records (multiple-choice letters or labels?)"


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_letters_are_said_to_be_labels_and_solutions_are_not(tmp_path):
    rows = real_data.rows("gsm8k/test.jsonl")[:400]
    rng = random.Random(2)
    letters = write(tmp_path / "mc.jsonl", [{"question": r["question"], "answer": rng.choice("ABCD")} for r in rows])
    assert f"the 4 {NOTE}" in auditor.scan(letters, text="question", answer="answer").markdown()
    solutions = write(tmp_path / "gsm8k.jsonl", rows)
    assert NOTE not in auditor.scan(solutions, text="question", answer="answer").markdown()
    few = write(tmp_path / "few.jsonl", [{"question": r["question"], "answer": rng.choice("ABCD")}
                                         for r in rows[:60]])           # under 100 records: not said
    assert NOTE not in auditor.scan(few, text="question", answer="answer").markdown()
