"""A signed number ("-5", "+1.5e3": a CSV input's ids, labels, answers) is a value, not a
formula: the CSV files made for reading keep it as written, so it stays a number in a spreadsheet
(it was "'-5", text). Anything more after the sign is still neutralised. From the round-5 hostile
review of the round-4 CSV-formula fix."""
from __future__ import annotations

import csv
import io

from auditor.evidence import spreadsheet_text
from conftest import run_cli


def test_signed_numbers_are_kept_and_formulas_are_not():
    for value in ("-5", "+5", "-0.25", "-.5", "+1.5e3", "-2E-7", "-10."):
        assert spreadsheet_text(value) == value
    for value in ("-5+cmd|' /C calc'!A0", "-2+3", "+1 apple", "-", "+", "-e5", "-5 ", "-1,2", "-0x10"):
        assert spreadsheet_text(value) == "'" + value


def test_a_dedup_manifest_keeps_negative_ids(tmp_path):
    texts = ["how many apples are left in the basket", "name the capital city of france today",
             "which colour is the sky at noon in summer"]
    lines = ["id,question"] + [f"-{i},{texts[(i - 1) % 3]}" for i in range(1, 7)]
    (tmp_path / "neg.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run_cli("dedup", tmp_path / "neg.csv", "--id", "id", "--out", tmp_path / "out.csv",
                           "--manifest", tmp_path / "manifest.csv", "--quiet")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "manifest.csv").read_text(encoding="utf-8"))))
    # rows 3..5 repeat rows 0..2 exactly: dropped, each named by its own negative id
    assert [(r["row"], r["id"], r["kept_row"]) for r in rows] == [("3", "-4", "0"), ("4", "-5", "1"),
                                                                  ("5", "-6", "2")]
