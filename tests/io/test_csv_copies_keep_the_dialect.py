"""A deduplicated or cleaned copy of a CSV/TSV file is the input's records as written, less the
removed ones: its delimiter, quoting, line ends, byte-order mark, Excel's sep= line and header
(repeated names as they were) kept. From the round-4 hostile review (a semicolon file came out
comma-separated, its BOM dropped and its repeated header renamed answer.1)."""
from __future__ import annotations

import json

import auditor
from auditor.dedup import dedup, write_dedup
from auditor.io.copies import local_stamps

BOM = "\ufeff"
HEAD = "question;answer;answer\r\n"
R1 = '"What is 2+2; exactly?";4;x\r\n'
R2 = '"Name the capital of France,\r\nin one word";Paris;y\r\n'      # a quoted line break
R3 = "Name a colour of the sky at noon;blue;z\r\n"


def _write(path, text: str):
    path.write_bytes(text.encode("utf-8"))
    return path


def _dedup_copy(src, out, text: str = "q") -> str:
    """The deduplicated copy (at 0.7) that ``write_dedup`` writes of ``src`` to ``out``, as written."""
    result = auditor.scan(str(src), text=text)
    write_dedup(result, dedup(result, 0.7), out, source=str(src), stamps=local_stamps(str(src), None))
    return out.read_bytes().decode()


def test_dedup_copy_of_a_semicolon_csv_with_a_bom_is_its_lines_less_the_duplicate(tmp_path, run_cli):
    src = _write(tmp_path / "semi.csv", BOM + HEAD + R1 + R2 + R1 + R3)
    out = tmp_path / "semi.dedup.csv"
    rc, _, err = run_cli("dedup", src, "--out", out, "--quiet")
    assert rc == 0, err
    # The fourth line (a repeat of R1) is the one dropped; everything else byte for byte.
    assert out.read_bytes() == (BOM + HEAD + R1 + R2 + R3).encode("utf-8")
    # Read back, the copy holds the kept records as the input's were read.
    assert list(auditor.load(str(out)).rows) == [r for i, r in enumerate(auditor.load(str(src)).rows) if i != 2]


def test_clean_copy_keeps_the_dialect_and_drops_the_leaked_rows(tmp_path, run_cli):
    test = _write(tmp_path / "test.csv", BOM + HEAD + R1 + R2 + R3)
    train = _write(tmp_path / "train.jsonl", json.dumps({"question": "Name a colour of the sky at noon"}) + "\n")
    out = tmp_path / "test.clean.csv"
    rc, _, err = run_cli("clean", test, "--against", train, "--text", "question", "--out", out, "--quiet")
    assert rc == 0, err
    assert out.read_bytes() == (BOM + HEAD + R1 + R2).encode("utf-8")
    assert json.loads((tmp_path / "test.clean.csv.dropped.json").read_text())["dropped_rows"][0]["row"] == 2


def test_excel_sep_line_tsv_and_a_last_line_without_end_are_kept(tmp_path):
    src = _write(tmp_path / "excel.csv", "sep=|\nq|a\nfirst question text here|1\nfirst question text here|1\n"
                 "second question text here|2")
    assert _dedup_copy(src, tmp_path / "excel.dedup.csv") == (
        "sep=|\nq|a\nfirst question text here|1\nsecond question text here|2")

    tsv = _write(tmp_path / "plain.tsv", 'q\ta\n"quoted\ttext"\t1\nunquoted text here\t2\nunquoted text here\t2\n')
    assert _dedup_copy(tsv, tmp_path / "plain.dedup.tsv") == 'q\ta\n"quoted\ttext"\t1\nunquoted text here\t2\n'


def test_files_joined_with_cat_and_a_folder_of_files_alike(tmp_path):
    # The repeated header line is not a record: not copied; a first file without a final line end
    # gets the header's before the next file's record.
    joined = _write(tmp_path / "joined.csv", "q,a\nalpha beta gamma,1\nq,a\nalpha beta gamma,1\ndelta epsilon,2\n")
    assert _dedup_copy(joined, tmp_path / "joined.dedup.csv") == "q,a\nalpha beta gamma,1\ndelta epsilon,2\n"

    folder = tmp_path / "parts"
    folder.mkdir()
    _write(folder / "a.csv", "q;a\r\nalpha beta gamma;1")
    _write(folder / "b.csv", "q;a\r\ndelta epsilon;2\r\nalpha beta gamma;1\r\n")
    assert _dedup_copy(folder, tmp_path / "parts.dedup.csv") == "q;a\r\nalpha beta gamma;1\r\ndelta epsilon;2\r\n"


def test_files_with_other_headers_or_another_output_format_are_written_anew(tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    _write(folder / "a.csv", "q,a\nalpha beta gamma,1\n")
    _write(folder / "b.csv", "q;a\nalpha beta gamma;1\ndelta epsilon;2\n")
    assert _dedup_copy(folder, tmp_path / "mixed.dedup.csv") == "q,a\r\nalpha beta gamma,1\r\ndelta epsilon,2\r\n"
    src = _write(tmp_path / "semi.csv", HEAD + R1 + R1)
    copy = _dedup_copy(src, tmp_path / "semi.dedup.jsonl", text="question")
    assert [json.loads(line) for line in copy.splitlines()] == [
        {"question": "What is 2+2; exactly?", "answer": "4", "answer.1": "x"}]


def test_a_csv_rewritten_between_scan_and_copy_is_refused(tmp_path):
    src = _write(tmp_path / "semi.csv", HEAD + R1 + R1 + R3)
    stamps = local_stamps(str(src), None)
    result = auditor.scan(str(src), text="question")
    _write(src, HEAD + R3 + R3 + R1)
    out = tmp_path / "semi.dedup.csv"
    try:
        write_dedup(result, dedup(result, 0.7), out, source=str(src), stamps=stamps)
    except auditor.AuditorError as exc:
        assert exc.code == "bad_format" and "changed while it was read" in exc.message
    else:
        raise AssertionError("a rewritten file was copied")
    assert not out.exists()
