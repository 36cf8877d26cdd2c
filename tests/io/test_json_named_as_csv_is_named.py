"""From a hostile review: a JSON array saved as .csv was "no records found" (its one line read as a
header) or, pretty-printed, "line 3: 2 values but the header has 1 columns"; compact JSON Lines was an
"unreadable CSV". Each is now named as JSON under a CSV name, with the fix."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor import AuditorError

RECORDS = [{"question": f"question {i}", "answer": i} for i in range(5)]


@pytest.mark.parametrize("text", [json.dumps(RECORDS), json.dumps(RECORDS, indent=2),
                                  json.dumps(RECORDS, separators=(",", ":"))], ids=["one_line", "pretty", "compact"])
def test_a_json_document_named_csv_says_so(tmp_path, run_cli, text):
    path = tmp_path / "data.csv"
    path.write_text(text, encoding="utf-8")
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "data.csv: the file starts with a JSON document, not a header: it looks like JSON " \
                         "named as CSV/TSV." in err and "Name it .json" in err
    renamed = path.rename(tmp_path / "data.json")                  # the fix the hint gives
    assert auditor.load(str(renamed)).rows == RECORDS


def test_compact_json_lines_named_csv_says_so(tmp_path):
    path = tmp_path / "data.tsv"
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in RECORDS), encoding="utf-8")
    with pytest.raises(AuditorError) as info:        # was "line 1: unreadable CSV (',' expected after '"')"
        auditor.load(str(path))
    assert info.value.code == "bad_format" and "looks like JSON Lines named as CSV/TSV" in info.value.message


def test_a_header_starting_with_a_bracket_is_still_a_header(tmp_path):
    path = tmp_path / "tags.csv"
    path.write_text("[tag],text\na,one two\nb,three four\n", encoding="utf-8")
    assert auditor.load(str(path)).rows == [{"[tag]": "a", "text": "one two"}, {"[tag]": "b", "text": "three four"}]
