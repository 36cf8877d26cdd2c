"""Values written back out: a NUL character, a bare carriage return and lone surrogates in CSV,
Parquet, JSON and the evidence files are escaped or refused clearly, and read back as written."""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import auditor
from auditor.cli import main
from auditor.leakage import leak
from definitions import read_jsonl, write_jsonl

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


ODD = [{"text": "alpha beta gamma delta epsilon", "answer": "1"},
       {"text": "a text holding a nul \u0000 character here", "answer": "2"},
       {"text": "alpha beta gamma delta epsilon", "answer": "1"},
       {"text": "something else entirely different words", "answer": "3"}]


def _write_odd(path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in ODD), encoding="utf-8")   # "\u0000" escaped


@pytest.fixture(scope="module")
def gsm(real_data):
    return read_jsonl(real_data / "gsm8k/train.jsonl"), read_jsonl(real_data / "gsm8k/test.jsonl")


def leak_pair(train, test, n_a=400, n_b=60):
    a = [{"id": f"tr-{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(train[:n_a])]
    b = [{"id": f"te-{i}", "question": r["question"], "answer": r["answer"]} for i, r in enumerate(test[:n_b])]
    return a, b


@pytest.mark.parametrize("command", ["dedup", "clean"])
def test_parquet_output_of_lone_surrogates_is_escaped_not_a_traceback(tmp_path, capsys, command):
    """From the hostile-input sweep."""
    src = tmp_path / "sur.jsonl"
    src.write_text('{"question": "alpha beta \\ud800 gamma", "tags": ["\\udc00", "ok"]}\n'
                   '{"question": "plain text here", "tags": ["ok"]}\n', encoding="utf-8")
    other = write_jsonl_str(tmp_path / "other.jsonl", [{"question": "nothing in common"}])
    out = tmp_path / "out.parquet"
    argv = ["dedup", str(src), "--out", str(out)] if command == "dedup" else \
        ["clean", str(src), "--against", other, "--out", str(out)]
    assert main(argv + ["--quiet"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "lone surrogates" in err
    assert pq.read_table(out).to_pylist() == [
        {"question": "alpha beta \\ud800 gamma", "tags": ["\\udc00", "ok"]},   # as the JSONL writer escapes
        {"question": "plain text here", "tags": ["ok"]}]


@pytest.mark.parametrize("argv", [["dedup", "IN", "--out", "OUT"],
                                  ["clean", "IN", "--against", "OTHER", "--out", "OUT"]])
@pytest.mark.slow
def test_a_nul_character_is_never_written_raw_into_a_csv(tmp_path, run_cli, argv):
    """From the round-4 review (hostile inputs)."""
    src, other = tmp_path / "in.jsonl", tmp_path / "other.jsonl"
    _write_odd(src)
    other.write_text(json.dumps({"text": "unrelated words only here", "answer": "9"}) + "\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    out.write_bytes(b"previous\r\n")
    args = [{"IN": src, "OTHER": other, "OUT": out}.get(a, a) for a in argv]
    rc, _, err = run_cli(*args, "--text", "text", "--quiet")
    assert rc == 2 and "Traceback" not in err and "NUL" in err and ".jsonl" in err, err
    assert out.read_bytes() == b"previous\r\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "other.jsonl", "out.csv"]
    # JSONL keeps the value: each written record is its input record.
    out_jsonl = tmp_path / "out.jsonl"
    args = [{"IN": src, "OTHER": other, "OUT": out_jsonl}.get(a, a) for a in argv]
    rc, _, err = run_cli(*args, "--text", "text", "--quiet")
    assert rc == 0, err
    written = [json.loads(line) for line in out_jsonl.read_text(encoding="utf-8").splitlines()]
    assert ODD[1] in written and all(r in ODD for r in written)


def test_the_evidence_csv_holds_no_nul_byte_and_reads_back(tmp_path, run_cli):
    """From the round-4 review (hostile inputs). The texts show the NUL as its code point, as every
    control character (hidden.visible); a NUL elsewhere (a field name) is written as its escape."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write_odd(a)
    _write_odd(b)
    evidence = tmp_path / "evidence.csv"
    rc, _, err = run_cli("leak", a, b, "--text", "text", "--evidence", evidence, "--quiet")
    assert rc == 0, err
    data = evidence.read_bytes()
    assert b"\x00" not in data
    cells = [c for row in csv.reader(io.StringIO(data.decode("utf-8"))) for c in row]
    assert ODD[1]["text"].replace("\x00", "⟨U+0000⟩") in cells
    assert len(auditor.load(str(evidence)).rows) >= 1           # the auditor reads its own file


def test_evidence_with_a_lone_surrogate_is_written_by_the_cli_and_the_app(gsm, run_cli, tmp_path):
    """From the review of several fields, conversations, the leak gate and evidence: A leaked text holding a
    lone surrogate (valid JSON: "\\ud800"): summary.json writes it as its escape (report.printable);
    evidence.csv shows it as its code point, as every hidden character (hidden.visible), the same bytes from
    `--evidence`, from --out-dir and from the app, instead of a UnicodeEncodeError (a traceback
    from the CLI; the app's whole leak check fails with "Something went wrong")."""
    train, test = gsm
    a, b = leak_pair(train, test)
    a[5]["question"] = "Lone \ud800 surrogate: " + a[5]["question"]
    b[7]["question"] = a[5]["question"]
    write_jsonl(tmp_path / "a.jsonl", a)
    write_jsonl(tmp_path / "b.jsonl", b)
    code, _, err = run_cli("leak", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--out-dir", tmp_path / "out",
                           "--evidence", tmp_path / "evidence.csv", "--quiet")
    assert code == 0 and "Traceback" not in err, err
    written = (tmp_path / "evidence.csv").read_bytes()
    assert written == (tmp_path / "out" / "evidence.csv").read_bytes()
    rows = list(csv.DictReader(io.StringIO(written.decode("utf-8"), newline="")))
    (row,) = [r for r in rows if r["b_row"] == "7"]
    assert row["b_text"] == row["a_text"] == a[5]["question"].replace("\ud800", "⟨U+D800⟩")
    from ui import handlers
    view = handlers.run("upload:a.jsonl", "", "", "", "", "", [], 0.7, None, str(tmp_path / "a.jsonl"), None,
                        "upload:a.jsonl", "http://space.example/")
    got = handlers.leak_check(view["state"], "", "", "", "", str(tmp_path / "b.jsonl"), False, "", "")
    assert got["leak_status"]["elem_classes"] == ["ok"], got["leak_status"]
    assert Path(got["dl_evidence"]["value"]).read_bytes() == written


def test_csv_outputs_keep_a_bare_carriage_return_inside_its_field(gsm, tmp_path):
    """From the review of several fields, conversations, the leak gate and evidence: csv's writer with
    lineterminator="\\n" quotes a field holding "\\n" but not one holding a
    bare "\\r" (old Mac line ends, scraped text): csv.reader, pandas and the auditor's own CSV
    reader then split the record there. evidence.csv (evidence.evidence_csv) and a clean copy
    written as .csv (clean.write_rows) must read back as written."""
    import auditor
    from auditor.io.copies import write_rows
    from auditor.leakage import leak
    train, test = gsm
    a, b = leak_pair(train, test)
    sentences = a[9]["question"].replace(",", "").replace('"', "").split(". ")
    a[9]["question"] = ".\r".join(sentences)                  # no comma, no quote, no "\n": only "\r"
    b[4]["question"] = a[9]["question"]
    write_jsonl(tmp_path / "a.jsonl", a)
    write_jsonl(tmp_path / "b.jsonl", b)
    result = leak(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    rows = list(csv.DictReader(io.StringIO(result.evidence_csv(), newline="")))
    assert [r["b_row"] for r in rows] == [str(i) for i in result.leaked_b_rows]
    (row,) = [r for r in rows if r["b_row"] == "4"]
    assert row["b_text"] == row["a_text"] == a[9]["question"] and row["a_id"] == "tr-9"
    write_rows([b[4], b[5]], tmp_path / "clean.csv")
    assert [r["question"] for r in auditor.load(str(tmp_path / "clean.csv")).rows] == [b[4]["question"], b[5]["question"]]


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_a_csv_copy_says_when_it_writes_lone_surrogates_as_text(tmp_path, capsys, suffix):
    """From a hostile review (session 52): a CSV copy wrote a lone surrogate as the six characters
    \\udfff (a CSV reader reads them back as text, unlike JSON's escape) without a note, where the
    Parquet copy said so."""
    src = tmp_path / "sur.jsonl"
    src.write_text('{"question": "alpha beta \\udfff gamma"}\n{"question": "alpha beta \\udfff gamma"}\n'
                   '{"question": "plain text here"}\n', encoding="utf-8")
    out = tmp_path / f"out.{suffix}"
    assert main(["dedup", str(src), "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 record(s) hold text with lone surrogates (not valid Unicode): written as \\uXXXX text" in err
    assert out.read_text(encoding="utf-8").splitlines()[1:] == ["alpha beta \\udfff gamma", "plain text here"]
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"question": "plain text here"}\n{"question": "é accents ü"}\n', encoding="utf-8")
    assert main(["dedup", str(plain), "--out", str(tmp_path / f"plain.{suffix}"), "--quiet"]) == 0
    assert "lone surrogates" not in capsys.readouterr().err
