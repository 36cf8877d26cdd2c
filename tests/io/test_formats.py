"""Every file format the readers take (JSONL, JSON lists and columns, CSV, TSV, Parquet, each
gzipped or compressed otherwise), their value types, byte-order marks and line ends."""
from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import auditor
from auditor import AuditorError
from auditor.cli import main
from auditor.contamination import contamination


ROWS = [
    {"question": "What is one plus one", "answer": "2", "code": "007"},
    {"question": "Name the capital of Italy", "answer": "Rome", "code": "010"},
    {"question": "How many days are in a week", "answer": "7", "code": "0"},
    {"question": "Spell the word cat, please", "answer": "c-a-t", "code": "00"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows, delimiter=",") -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_parquet(path: Path, rows) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def gzipped(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def make_format(tmp_path: Path, fmt: str) -> Path:
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "d.jsonl", ROWS)
    if fmt == "ndjson":
        return write_jsonl(tmp_path / "d.ndjson", ROWS)
    if fmt == "json-list":
        p = tmp_path / "d.json"
        p.write_text(json.dumps(ROWS, indent=1), encoding="utf-8")
        return p
    if fmt == "json-columns":
        p = tmp_path / "d.json"
        p.write_text(json.dumps({k: [r[k] for r in ROWS] for k in ROWS[0]}), encoding="utf-8")
        return p
    if fmt == "json-data-key":
        p = tmp_path / "d.json"
        p.write_text(json.dumps({"data": ROWS}), encoding="utf-8")
        return p
    if fmt == "csv":
        return write_csv(tmp_path / "d.csv", ROWS)
    if fmt == "tsv":
        return write_csv(tmp_path / "d.tsv", ROWS, delimiter="\t")
    if fmt == "parquet":
        return write_parquet(tmp_path / "d.parquet", ROWS)
    raise ValueError(fmt)


FORMATS = ["jsonl", "ndjson", "json-list", "json-columns", "json-data-key", "csv", "tsv", "parquet"]
APPLE_ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in APPLE_ROWS).encode()


def _csv(rows) -> bytes:
    return ("text,answer\n" + "".join(f"{r['text']},{r['answer']}\n" for r in rows)).encode()


def cli_error(capsys, argv) -> str:
    """Run the CLI; it must exit 2 with one error line and no traceback. Returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_load_each_format(tmp_path, fmt, gz):
    path = make_format(tmp_path, fmt)
    if gz:
        path = gzipped(path)
    table = auditor.load(str(path))
    assert table.rows == ROWS
    assert table.columns == ["question", "answer", "code"]
    assert table.files == (path.name,)
    assert table.source == path.name                     # never a directory of this machine
    assert table.truncated is False
    result = auditor.scan(str(path))
    assert result.roles.text == "question" and result.roles.answer == "answer"
    assert result.records == 4


def test_csv_values_stay_strings(tmp_path):
    path = tmp_path / "codes.csv"
    path.write_text("id,text,flag,amount\n007,hello there,true,1.50\n010,second row,,2\n", encoding="utf-8")
    rows = auditor.load(str(path)).rows
    assert rows == [{"id": "007", "text": "hello there", "flag": "true", "amount": "1.50"},
                    {"id": "010", "text": "second row", "flag": "", "amount": "2"}]
    result = auditor.scan(str(path), text="text", id="id")
    assert result.fields.ids == ["007", "010"]


def test_jsonl_types_are_kept_and_numbers_become_text(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [{"text": "a b c", "n": 7, "x": 0.25},
                                              {"text": "d e f", "n": 8, "x": 1.0}])
    assert auditor.load(str(path)).rows[0] == {"text": "a b c", "n": 7, "x": 0.25}
    result = auditor.scan(str(path), text="text", answer="n", group="x")
    assert result.fields.answer == ["7", "8"]
    assert result.fields.group == ["0.25", "1"]      # a whole float is its int (pandas widens ints to floats)


def test_utf8_bom_is_accepted(tmp_path):
    jsonl = tmp_path / "bom.jsonl"
    jsonl.write_bytes("\ufeff".encode() + "".join(json.dumps(r) + "\n" for r in ROWS).encode())
    assert auditor.load(str(jsonl)).rows == ROWS
    csv_path = tmp_path / "bom.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + write_csv(tmp_path / "plain.csv", ROWS).read_bytes())
    rows = auditor.load(str(csv_path)).rows
    assert list(rows[0]) == ["question", "answer", "code"]     # no BOM glued to the first column name
    assert rows == ROWS


def test_crlf_and_blank_lines(tmp_path):
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(("\r\n".join(json.dumps(r) for r in ROWS) + "\r\n\r\n\n").encode())
    assert auditor.load(str(path)).rows == ROWS


def test_unicode_line_separator_inside_a_string(tmp_path):
    rows = [{"text": "first\u2028still first"}, {"text": "second"}]
    path = write_jsonl(tmp_path / "ls.jsonl", rows)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert auditor.load(str(path)).rows == rows


def test_byte_order_marks_are_accepted(tmp_path):
    """From the hostile-input review."""
    for name, data in (("bom.jsonl", JSONL), ("bom.csv", _csv(APPLE_ROWS)), ("bom.json", json.dumps(APPLE_ROWS).encode())):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + data)
        for cap in (None, 5):
            table = auditor.load(str(path), max_rows=cap)
            assert table.rows[0]["text"] == APPLE_ROWS[0]["text"] and "text" in table.columns, name


def test_parquet_columns_with_one_name_are_both_kept(tmp_path):
    """From the hostile-input sweep."""
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["first a", "first b"]), pa.array(["second a", "second b"]),
                                         pa.array(["x", "y"])], names=["question", "question", ""]), path)
    table = auditor.load(str(path))
    assert table.rows == [{"question": "first a", "question.1": "second a", "Unnamed: 2": "x"},
                          {"question": "first b", "question.1": "second b", "Unnamed: 2": "y"}]
    assert any("question.1" in n for n in table.notices)


def test_parquet_text_stored_as_binary_reads_as_its_utf8_text(tmp_path):
    """From the hostile-input sweep: Older Spark/Hive write strings as binary without the UTF-8 mark: named
    as the text field, it
    reads as the text it is, with the same findings as the string column (a binary field is never
    guessed: it may be an image); bytes that are not UTF-8 are a clear error."""
    import real_data
    questions = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")[:300]]
    questions += questions[:20]                                   # 20 exact copies
    pq.write_table(pa.table({"text": pa.array(questions, pa.string())}), tmp_path / "s.parquet")
    pq.write_table(pa.table({"text": pa.array([q.encode() for q in questions], pa.binary())}), tmp_path / "b.parquet")
    as_string, as_binary = auditor.scan(str(tmp_path / "s.parquet")), auditor.scan(str(tmp_path / "b.parquet"), text="text")
    assert as_binary.fields.text == questions
    for key in ("exact_duplicates", "near_duplicates", "curve", "degenerate"):
        assert as_binary.summary()[key] == as_string.summary()[key], key
    assert as_binary.summary()["exact_duplicates"]["text"]["redundant"] == 20
    pq.write_table(pa.table({"text": pa.array([b"\xff\xfe\x00 not text"] * 3, pa.binary())}), tmp_path / "x.parquet")
    with pytest.raises(AuditorError, match="binary data, not UTF-8 text"):
        auditor.scan(str(tmp_path / "x.parquet"), text="text")


def test_bz2_xz_and_zstd_files_read_as_the_plain_file(tmp_path, capsys):
    """From the hostile-input sweep: .bz2, .xz and .zst (common for pretraining shards) read as their plain
    file, alone and in a
    folder (so a folder reads the same records on both engines); a broken stream is a clear error."""
    import bz2
    import lzma
    import real_data
    rows = real_data.rows("gsm8k/test.jsonl")[:200]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    (tmp_path / "plain.jsonl").write_bytes(raw)
    (tmp_path / "d.jsonl.bz2").write_bytes(bz2.compress(raw))
    (tmp_path / "d.jsonl.xz").write_bytes(lzma.compress(raw))
    with pa.CompressedOutputStream(str(tmp_path / "d.jsonl.zst"), "zstd") as out:
        out.write(raw)
    plain = auditor.load(str(tmp_path / "plain.jsonl")).rows
    assert plain == rows
    for name in ("d.jsonl.bz2", "d.jsonl.xz", "d.jsonl.zst"):
        assert auditor.load(str(tmp_path / name)).rows == rows, name
        assert contamination(str(tmp_path / name), "gsm8k").summary()["contaminated"]["records"] == 200, name
    assert len(auditor.load(str(tmp_path), split=None).rows) == 800            # the folder: all four files
    (tmp_path / "cut.jsonl.zst").write_bytes((tmp_path / "d.jsonl.zst").read_bytes()[:200])
    (tmp_path / "cut.jsonl.bz2").write_bytes((tmp_path / "d.jsonl.bz2").read_bytes()[:200])
    for name, says in (("cut.jsonl.zst", "not a valid zstd file"), ("cut.jsonl.bz2", "bzip2 stream ends early")):
        line = cli_error(capsys, ["scan", str(tmp_path / name)])
        assert says in line and name in line, line
