"""A CSV header whose quoted column name holds a line break ("answer, in\\nwords", as Excel writes a
wrapped header cell) is one header: its delimiter is judged on the whole header, and commas inside a
quoted name do not count as delimiters. Judged on its first line (a quote left open), a semicolon
file was refused with "',' expected after '\\"'", or read silently as one column of garbage."""
from __future__ import annotations

import pandas as pd
import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.dedup import dedup, write_dedup
from auditor.io.copies import local_stamps

NAMES = [("question", "the SQL query,\nas written", "db_id"),        # a comma inside the wrapped name
         ("question", "query\n(gold)\nSQL", "db_id"),               # two breaks, no delimiter inside
         ("the\nquestion", "query", "db_id")]                        # the first name wrapped


def _spider(names) -> list[dict]:
    rows = real_data.rows("spider/train_spider.jsonl")[:120]
    return [dict(zip(names, (r["question"], r["query"], r["db_id"]))) for r in rows]


@pytest.mark.parametrize("names", NAMES, ids=["comma inside", "two breaks", "first name"])
@pytest.mark.parametrize("sep", [";", "\t", ","], ids=["semicolon", "tab", "comma"])
def test_a_header_name_with_a_line_break_reads_as_pandas_reads_it(tmp_path, names, sep):
    """From the round-6 hostile review: each file reads value for value as pandas reads it."""
    rows = _spider(names)
    path = tmp_path / "spider.csv"
    pd.DataFrame(rows).to_csv(path, index=False, sep=sep)
    expected = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False).to_dict("records")
    assert expected == rows
    assert auditor.load(str(path)).rows == rows


def test_errors_after_such_a_header_name_the_files_line(tmp_path):
    """From the round-6 hostile review: the header's two lines count in the line named."""
    path = tmp_path / "bad.csv"
    path.write_text('id;"q\nx";ans\n1;What is two plus two;4\n2;Name a colour;red\n3;bad;line;here\n', encoding="utf-8")
    with pytest.raises(AuditorError, match=r"bad\.csv, line 5: 4 values but the header has 3 columns"):
        auditor.load(str(path))


def test_a_dedup_copy_keeps_such_a_header_as_written(tmp_path):
    """From the round-6 hostile review: the copy's head is the header's two lines, CRLF kept."""
    head = 'id;"q\r\nx";ans\r\n'
    records = ["1;What is two plus two;4\r\n", "2;Name a colour;red\r\n", "3;What is two plus two;4\r\n"]
    src = tmp_path / "semi.csv"
    src.write_bytes((head + "".join(records)).encode("utf-8"))
    result = auditor.scan(str(src), text="q\r\nx")
    out = tmp_path / "semi.dedup.csv"
    write_dedup(result, dedup(result, 0.7), out, source=str(src), stamps=local_stamps(str(src), None))
    assert out.read_bytes() == (head + records[0] + records[1]).encode("utf-8")


@pytest.mark.parametrize("header", ['size 5";name', 'name;size 5"', 'a "quoted" word;name'])
def test_a_quote_inside_an_unquoted_header_name_opens_nothing(tmp_path, header):
    """From the round-6 hostile review: a quote inside a name (size 5") is a character, as pandas
    reads it; counted as an open quote, the header ran on into the records (one column, silently)."""
    path = tmp_path / "inches.csv"
    path.write_text(header + '\n1;x\n2;"y; z"\n', encoding="utf-8")
    expected = pd.read_csv(path, sep=";", dtype=str, keep_default_na=False).to_dict("records")
    assert len(expected[0]) == 2
    assert auditor.load(str(path)).rows == expected


def test_a_header_quote_never_closed_is_refused_in_linear_time(tmp_path):
    """From the round-6 hostile review: a header opening a quote it never closes, before 1,200 lines
    of 1,000 characters (1.2 MB): the header's lines were searched again whole as each one was
    added, 35 s; now a step per quote, the same error as before at once."""
    import time
    path = tmp_path / "open.csv"
    path.write_text('"question\n' + ("x" * 1000 + "\n") * 1200, encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(AuditorError, match=r"open\.csv, line 1: a quoted value opened there is never closed"):
        auditor.load(str(path))
    assert time.perf_counter() - start < 10
