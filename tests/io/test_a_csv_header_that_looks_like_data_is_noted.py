"""From a hostile review: a CSV written without a header lost its first record, read as the column
names ("row 0 a b", "0"), with no word of it. A notice now says so when a column named by a number
holds numbers; real headers ("id", "text", "label"), numbered columns and years never trigger it."""
from __future__ import annotations

import auditor
from auditor.io.formats import stream_batches

NOTICE = ("nohdr.csv: the header row ('row 0 a b', '0') looks like data (a column named by a number holds numbers): "
          "if the file has no header, add one (its first record is read as column names)")


def headerless(tmp_path):
    path = tmp_path / "nohdr.csv"
    path.write_text("".join(f"row {i} a b,{i}\n" for i in range(10)), encoding="utf-8")
    return path


def test_a_csv_without_a_header_is_noted(tmp_path):
    path = headerless(tmp_path)
    table = auditor.load(str(path))
    assert len(table.rows) == 9 and table.notices == (NOTICE,)
    assert auditor.scan(str(path)).summary()["input"]["notices"] == [NOTICE]
    # under a row cap too (judged on the records read), and by the reader of streams other filesystems open
    assert auditor.load(str(path), max_rows=3).notices == (NOTICE,)
    notices: list = []
    with open(path, "rb") as handle:
        rows = [r for batch in stream_batches(handle, path.name, "csv", notices) for r in batch]
    assert len(rows) == 9 and notices == [NOTICE]


def test_real_headers_are_never_taken_for_data(tmp_path):
    files = {
        "named.csv": "id,text,label\n" + "".join(f"{i},some text number {i},{i % 2}\n" for i in range(30)),
        "qa.csv": "question,answer\n" + "".join(f"what is {i} plus {i},{2 * i}\n" for i in range(30)),
        # pandas and numpy name unnamed columns 0, 1, 2 (a Series: "0"); a table by year names them so
        "numbered.csv": "0,1,2\n" + "".join(f"{i},{i + 1},{i * 2}\n" for i in range(30)),
        "series.csv": "0\n" + "".join(f"{i}\n" for i in range(1, 31)),
        "years.csv": "country,2019,2020\n" + "".join(f"country {i},{i}.5,{i}\n" for i in range(30)),
        # a number-named column of text is a name too
        "mixed.csv": "text,7\n" + "".join(f"text {i},word {i}\n" for i in range(30)),
    }
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
        table = auditor.load(str(tmp_path / name))
        assert len(table.rows) == 30 and table.notices == (), name


def test_a_header_that_reads_as_a_sentence_is_noted_and_its_repeats_stay_records(tmp_path):
    """From a browser review: GSM8K rows saved with no header; the first record became the column
    names, and its later copy was skipped as a "repeated header": a real duplicate lost, no word said."""
    import csv
    import io

    import real_data
    rows = [(r["question"], r["answer"]) for r in real_data.rows("gsm8k/train.jsonl")[:20]]
    rows += rows[:3]                                         # three duplicates, the first record's among them
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path = tmp_path / "noheader.csv"
    path.write_text(buf.getvalue(), encoding="utf-8")
    table = auditor.load(str(path))
    assert len(table.rows) == len(rows) - 1                 # the first record is the names; its copy is kept
    assert list(table.rows[-3].values()) == list(rows[0])
    assert any("looks like data (a column name that reads as a sentence)" in n for n in table.notices)
    assert any("1 line(s) equal the header" in n and "kept as records, as a header that reads as data" in n
               for n in table.notices)
    # a real header, however long its names, is no sentence: a survey's question stays a name
    survey = tmp_path / "survey.csv"
    survey.write_text("id,How satisfied are you with the product overall?\n1,very\n2,not at all\n", encoding="utf-8")
    assert auditor.load(str(survey)).notices == ()
