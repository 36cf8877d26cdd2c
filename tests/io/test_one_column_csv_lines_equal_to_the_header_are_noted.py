"""From a hostile review: one-column CSV files joined with cat kept the second file's header line as a
record with no word of it (files of two or more columns skip it with a notice). In one column the line
may be a real value equal to the column's name, so it stays a record, and a notice names its lines."""
from __future__ import annotations

import auditor


def test_lines_equal_to_a_one_column_header_are_kept_and_noted(tmp_path):
    path = tmp_path / "cat2.csv"
    path.write_text("question\nalpha one two\nquestion\nbeta one two\n\ufeffquestion\ngamma\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert [r["question"] for r in table.rows] == ["alpha one two", "question", "beta one two", "\ufeffquestion",
                                                   "gamma"]
    assert table.notices == ("cat2.csv: 2 line(s) equal the header 'question' (files joined together?); kept as "
                             "records, as a one-column file may hold that value: line 3, 5",)


def test_two_columns_still_skip_the_repeated_header(tmp_path):
    path = tmp_path / "cat.csv"
    path.write_text("question,answer\nalpha,1\nquestion,answer\nbeta,2\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [{"question": "alpha", "answer": "1"}, {"question": "beta", "answer": "2"}]
    assert len(table.notices) == 1 and "1 line(s) repeat the header" in table.notices[0]
