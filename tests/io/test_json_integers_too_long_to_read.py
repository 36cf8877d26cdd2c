"""A whole number of more digits than Python converts (4,300 by default, CVE-2020-10735) is valid
JSON that cannot be read: one clear error naming the file and the line or item, in every JSON
reader. A .json file holding one was an internal error (exit 3, a traceback); JSON Lines called
the line "not valid JSON"."""
from __future__ import annotations

import json
import sys

import pytest

import auditor
import real_data
from auditor import AuditorError


ROWS = [{"question": row["question"], "answer": row["answer"]} for row in real_data.rows("gsm8k/test.jsonl")[:20]]
DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
HUGE = "9" * (DIGITS + 1)


def _files(tmp_path) -> dict:
    """name -> (path, options, where the error must point)."""
    lines = [json.dumps(r) for r in ROWS]
    lines[7] = lines[7][:-1] + f', "id": {HUGE}}}'          # record 7 (line 8, item 7)
    (tmp_path / "long.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "long_list.json").write_text("[" + ",\n".join(lines) + "]", encoding="utf-8")
    doc = '{"version": 1, "data": [' + ", ".join(lines) + "]}"
    (tmp_path / "long_doc.json").write_text(doc, encoding="utf-8")
    return {"jsonl": (tmp_path / "long.jsonl", {}, "long.jsonl, line 8"),
            "json list": (tmp_path / "long_list.json", {}, "long_list.json"),
            "json list, row cap (item by item)": (tmp_path / "long_list.json", {"max_rows": 15},
                                                  "long_list.json, item 7"),
            "json document": (tmp_path / "long_doc.json", {}, "long_doc.json")}


CASES = ["jsonl", "json list", "json list, row cap (item by item)", "json document"]


@pytest.mark.parametrize("case", CASES)
def test_an_integer_too_long_for_python_is_a_clear_error(tmp_path, case):
    """From the round-4 hostile review."""
    path, options, where = _files(tmp_path)[case]
    with pytest.raises(AuditorError) as info:
        auditor.scan(str(path), **options)
    assert info.value.code == "bad_format"
    assert info.value.message.startswith(where + ":")
    assert f"more than {DIGITS:,} digits" in info.value.message
    assert "string" in info.value.hint


@pytest.mark.parametrize("case", CASES)
def test_an_integer_too_long_is_exit_2_in_the_cli(tmp_path, run_cli, case):
    """From the round-4 hostile review."""
    path, options, where = _files(tmp_path)[case]
    extra = ["--max-rows", str(options["max_rows"])] if options else []
    code, _, err = run_cli("scan", path, *extra, "--quiet")
    assert code == 2, err
    assert "Traceback" not in err and f"error: {where}:" in err


def test_the_rows_before_a_long_integer_are_read_under_a_row_cap(tmp_path):
    """From the round-4 hostile review: a cap reached before the line stops reading there (the
    reader takes one row past the cap, to know the file was cut: record 7 for a cap of 7)."""
    path, _, _ = _files(tmp_path)["jsonl"]
    assert auditor.load(str(path), max_rows=6).rows == ROWS[:6]
    with pytest.raises(AuditorError, match="line 8"):
        auditor.load(str(path), max_rows=7)
