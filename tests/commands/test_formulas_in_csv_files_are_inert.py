"""A dataset's text that a spreadsheet would run as a formula ("=HYPERLINK(...)", "@SUM(...)",
"+cmd...") is written to the CSV files made for reading (evidence.csv, the dedup manifest, the
app's pairs.csv) with an apostrophe before it, so it opens as text; every other cell, summary.json
and the data themselves keep the text as it is. From the round-4 hostile review."""
from __future__ import annotations

import csv
import io
import json

import real_data
from auditor.evidence import FORMULA_START, spreadsheet_text
from conftest import run_cli

LURE = '=HYPERLINK("http://example.invalid/?leak","open") '


def _write(path, texts):
    path.write_text("".join(json.dumps({"question": t}) + "\n" for t in texts), encoding="utf-8")


def test_a_leaked_formula_opens_as_text_in_evidence_csv(tmp_path):
    train = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")[:300]]
    test = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:40]]
    planted = [LURE + test[0], "@SUM(1,2) " + test[1], "+" + test[2], test[3]]   # three formulas, one plain
    _write(tmp_path / "train.jsonl", train + planted)
    _write(tmp_path / "test.jsonl", planted + test[4:])
    code, _, err = run_cli("leak", tmp_path / "train.jsonl", tmp_path / "test.jsonl", "--text", "question",
                           "--out-dir", tmp_path / "out", "--quiet")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "evidence.csv").read_text(encoding="utf-8"))))
    texts = {r["b_text"] for r in rows}
    assert texts == {"'" + t for t in planted[:3]} | {planted[3]}       # the four copies, found
    assert {r["a_text"] for r in rows} == texts
    for r in rows:                                                        # no other cell starts a formula
        assert not any(v.startswith(FORMULA_START) for v in r.values()), r
    summary = (tmp_path / "out" / "summary.json").read_text(encoding="utf-8")
    assert "'=HYPERLINK" not in summary                                   # the machine-readable report: as is


def test_only_text_that_would_run_is_changed():
    for start in FORMULA_START:
        assert spreadsheet_text(start + "x") == "'" + start + "x"
    for value in ("A question = 3 + 4?", " =1+1", "", "'=already", "[1, 2]"):
        assert spreadsheet_text(value) == value
    assert spreadsheet_text(-5) == -5 and spreadsheet_text(None) is None and spreadsheet_text(0.5) == 0.5
