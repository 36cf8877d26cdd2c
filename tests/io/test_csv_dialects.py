"""CSV and TSV as users write them: delimiters other than a comma (guessed and said), repeated,
blank or unnamed headers, blank lines before the header, long cells, Excel's sep= line, files joined
with cat, unquoted TSV: each read as pandas reads it, or one clear error."""
from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.cli import main


def cli_error(capsys, argv) -> str:
    """Run the CLI; it must exit 2 with one error line and no traceback. Returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


N = 300


@pytest.fixture(scope="module")
def gsm_train_and_test(real_data):
    def rows(rel):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    return rows("gsm8k/train.jsonl"), rows("gsm8k/test.jsonl")[:N]


def test_csv_cell_longer_than_the_csv_module_default_is_read(tmp_path):
    """From the hostile-input review."""
    path = tmp_path / "long.csv"
    path.write_text('text,answer\n"' + "word " * 60_000 + '",1\nshort text here,2\n', encoding="utf-8")
    table = auditor.load(str(path))
    assert len(table.rows) == 2 and len(table.rows[0]["text"]) == 300_000


def test_csv_with_repeated_column_names_keeps_both_and_says_so(tmp_path, run_cli):
    """From the hostile-input review."""
    path = tmp_path / "dup.csv"
    path.write_text("text,text,answer\nfirst text here,second text here,1\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [{"text": "first text here", "text.1": "second text here", "answer": "1"}]
    assert any("text.1" in n for n in table.notices)
    rc, out, err = run_cli("scan", path, "--quiet", "--json", "-")
    assert rc == 0, err
    assert any("text.1" in n for n in json.loads(out)["input"]["notices"])


def test_repeated_and_blank_csv_headers_are_named_as_pandas_names_them(tmp_path):
    """From the hostile-input sweep."""
    header = ["a", "a", "a.1", "a", "", " ", "text"]
    path = tmp_path / "odd_header.csv"
    path.write_text(",".join(header) + "\n" + ",".join(str(i) for i in range(len(header))) + "\n", encoding="utf-8")
    table = auditor.load(str(path))
    expected = list(pd.read_csv(path, dtype=str).columns)     # pandas: the reference naming
    # (pandas keeps a blank-but-spaced name as it is; here every blank name is "Unnamed: i")
    expected[5] = "Unnamed: 5"
    assert list(table.rows[0]) == expected
    assert list(table.rows[0].values()) == [str(i) for i in range(len(header))]
    assert any("without a name" in n for n in table.notices)
    assert any("repeated column names" in n for n in table.notices)
    # An unnamed column can be given as a role by the name it is read under.
    assert auditor.scan(str(path), text="Unnamed: 4").roles.text == "Unnamed: 4"


@pytest.mark.slow
def test_a_wide_header_of_one_repeated_name_reads_in_linear_time(tmp_path):
    # 20,000 columns all called "a": renaming tried a.1, a.2 ... from 1 for each (minutes); now
    # each name continues where it stopped.
    """From the hostile-input sweep."""
    n = 20_000
    path = tmp_path / "wide.csv"
    path.write_text(",".join(["a"] * n) + "\n" + ",".join(map(str, range(n))) + "\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert list(table.rows[0]) == list(pd.read_csv(path, dtype=str).columns)
    assert table.rows[0]["a.19999"] == "19999"
    notice = next(n for n in table.notices if "repeated" in n)
    assert notice.endswith("a.10 and 19,989 more") and len(notice) < 300


@pytest.mark.parametrize("name, text, delimiter", [
    ("semicolon.csv", "question;answer\nwhat is one plus one;2\n\"a;b\";3\n", ";"),
    ("tabs.csv", "question\tanswer\nwhat is one plus one\t2\n", "\t"),
    ("commas.tsv", "question,answer\nwhat is one plus one,2\n", ","),
])
def test_a_csv_with_another_delimiter_is_read_by_it_and_says_so(tmp_path, name, text, delimiter):
    """From the hostile-input sweep."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == list(csv.DictReader(io.StringIO(text), delimiter=delimiter))
    assert len(table.notices) == 1 and "-separated" in table.notices[0]


def test_a_one_column_csv_with_semicolons_in_its_values_stays_one_column(tmp_path):
    """From the hostile-input sweep."""
    path = tmp_path / "one.csv"
    path.write_text("text\nhello; world\nplain\n", encoding="utf-8")
    table = auditor.load(str(path))
    assert table.rows == [{"text": "hello; world"}, {"text": "plain"}] and not table.notices


def test_lines_of_only_spaces_before_a_csv_header_are_skipped(tmp_path):
    """From the hostile-input sweep."""
    path = tmp_path / "spaces_first.csv"
    path.write_text("   \n\t\nquestion,answer\nwhat is one plus one,2\n", encoding="utf-8")
    assert auditor.load(str(path)).rows == [{"question": "what is one plus one", "answer": "2"}]


def test_csv_header_and_delimiter_edge_cases_read_as_pandas_reads_them(tmp_path):
    """From the hostile-input sweep: A one-column CSV whose column has no name (pandas writes '""'), a
    one-column file whose header
    holds a semicolon, and blank lines before a header: read as pandas reads them."""
    cases = {"blank_name.csv": pd.DataFrame({"": ["foo", "bar"]}).to_csv(index=False),
             "semicolon_in_header.csv": 'notes; remarks\n"hello, world"\n"a; b"\n',
             "tab_in_header.csv": "question\ttext\nfoo\n",
             "blank_lines_first.csv": "\n \n\nq,a\nx,1\ny,2\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        expected = pd.read_csv(tmp_path / name, dtype=str, keep_default_na=False).to_dict("records")
        assert auditor.load(str(tmp_path / name)).rows == expected, name


def test_blank_lines_before_a_csv_header_are_counted_not_kept(tmp_path):
    """From the hostile-input sweep: Lines numbers in errors are the file's; memory does not hold the blank
    lines."""
    (tmp_path / "late.csv").write_text("\n" * 5 + "q,a\nx,1\ny,2,3\n", encoding="utf-8")
    with pytest.raises(AuditorError, match=r"late.csv, line 8: 3 values but the header has 2 columns"):
        auditor.load(str(tmp_path / "late.csv"))


def test_a_csv_header_in_braces_that_is_not_json_is_a_header(tmp_path, capsys):
    """From the hostile-input sweep: Only a real JSON object as the first line means JSON Lines named .csv;
    "{id},{text}" is a header."""
    (tmp_path / "braces.csv").write_text("{id},{text}\n1,first question here\n", encoding="utf-8")
    assert auditor.load(str(tmp_path / "braces.csv")).rows == [{"{id}": "1", "{text}": "first question here"}]
    (tmp_path / "lines.csv").write_text('{"id": 1, "text": "a"}\n{"id": 2, "text": "b"}\n', encoding="utf-8")
    assert "looks like JSON Lines named as CSV" in cli_error(capsys, ["scan", str(tmp_path / "lines.csv")])


def test_excel_sep_line_names_the_delimiter(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes: Excel's "sep=;" first line: read as the
    header, the real header became a record (301 of
    300) and the columns "sep=" and "Unnamed: 1" (the answers guessed as the text)."""
    _, test = gsm_train_and_test
    path = tmp_path / "excel.csv"
    body = pd.DataFrame(test).to_csv(index=False, sep=";", lineterminator="\r\n")
    path.write_text("sep=;\r\n" + body, encoding="utf-8")
    expected = pd.read_csv(path, sep=";", skiprows=1, dtype=str, keep_default_na=False).to_dict("records")
    table = auditor.load(str(path))
    assert table.rows == expected and len(table.rows) == N
    assert any("sep=;" in notice for notice in table.notices)
    summary = auditor.scan(str(path)).summary()
    assert (summary["roles"]["text"], summary["input"]["records"]) == ("question", N)


def test_csv_files_joined_with_cat_keep_no_header_as_a_record(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes: `cat a.csv b.csv`: b's header line (with
    its byte-order mark, as Excel saves) was one more
    record, {"question": "\\ufeffquestion", "answer": "answer"}: 601 records of 600."""
    train, test = gsm_train_and_test
    parts = []
    for k, rows in enumerate((test, train[:200])):
        part = tmp_path / f"part{k}.csv"
        pd.DataFrame(rows).to_csv(part, index=False, encoding="utf-8-sig")
        parts.append(part.read_bytes())
    joined = tmp_path / "joined.csv"
    joined.write_bytes(b"".join(parts))
    expected = pd.concat([pd.read_csv(tmp_path / f"part{k}.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
                          for k in range(2)]).to_dict("records")
    table = auditor.load(str(joined))
    assert table.rows == expected and len(table.rows) == N + 200
    assert any("repeat the header" in notice for notice in table.notices)


def test_unquoted_tsv_error_names_the_conversion(gsm_train_and_test, tmp_path, run_cli):
    """From the review of real benchmark rows in curators' shapes: GLUE-style TSV, written without quoting: a
    text that starts with a quote is not a quoted
    value. Refused (as pandas' default reader refuses it), with the conversion that reads it."""
    _, test = gsm_train_and_test
    lines = ["id\tquestion"] + [f"{i}\t" + ('"Quoted" ' if i == 3 else "") + r["question"].replace("\n", " ")
                                for i, r in enumerate(test[:40])]
    path = tmp_path / "glue.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run_cli("scan", path, "--quiet")
    assert code == 2 and "line 5" in err and "quoting=3" in err and "Traceback" not in err
    assert len(pd.read_csv(path, sep="\t", quoting=3)) == 40          # the conversion the hint gives works


def test_semicolon_csv_whose_first_record_spans_lines(tmp_path):
    """From the round-4 review (real data): A European Excel CSV (semicolons) of Spider and MBPP rows whose
    first record holds a quoted
    newline: the first record's first line (a quote left open) held fewer values than the header,
    so the file was read as comma-separated and refused ("5 values but the header has 1 columns").
    It reads back value for value, and a one-column file whose header holds a semicolon stays one."""
    train = real_data.rows("spider/train_spider.jsonl")[:200]
    rows = [{"question": r["question"], "query": r["query"].replace("  ", "\n"), "db_id": r["db_id"]} for r in train]
    rows[0]["question"] = "List the heads;\nolder first"          # the first record: a newline and a semicolon
    path = tmp_path / "spider_semicolon.csv"
    pd.DataFrame(rows).to_csv(path, index=False, sep=";")
    assert path.read_text(encoding="utf-8").splitlines()[0] == "question;query;db_id"
    table = auditor.load(str(path))
    assert table.rows == rows
    assert any("semicolon" in n for n in table.notices)

    mbpp = [{"text": r["text"], "code": r["code"]} for r in real_data.rows("mbpp/mbpp.jsonl")[:100]]
    path = tmp_path / "mbpp_semicolon.csv"
    pd.DataFrame(mbpp).to_csv(path, index=False, sep=";")
    assert auditor.load(str(path)).rows == mbpp

    one = tmp_path / "one.csv"
    one.write_text('notes; remarks\n"first line\nsecond; line"\n', encoding="utf-8")
    assert auditor.load(str(one)).rows == [{"notes; remarks": "first line\nsecond; line"}]
