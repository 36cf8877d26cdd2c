"""A dedup copy of local JSONL or CSV read with a row cap (--max-rows N) is the kept records among the
first N as written, as an uncapped copy is: JSONL lines byte for byte (number forms, escapes, spacing),
a CSV's byte-order mark, Excel's sep= line, header, delimiter and line ends kept. Reading stops at the
cap, across the files of a folder too.

From a hostile review: under a row cap the copy was re-serialised from the values read (1e2 became
100.0, \\u00e9 became é; a `;` CSV lost its BOM and sep= line and came out comma-separated), with no
notice."""
from __future__ import annotations

import json

JSONL_LINES = [
    '{"question":"caf\\u00e9 one two three","n":1.0,"m":1e2}\n',
    '{"question":"caf\\u00e9 one two three","n":1.0}\n',          # a duplicate of line 0: dropped
    '{"question":"other words entirely here","z":   3}\n',
    '{"question":"more words of a fourth record"}\n',
]


def dropped_rows(manifest) -> list:
    return sorted(d["row"] for d in json.loads(manifest.read_text())["dropped_rows"])


def test_a_capped_jsonl_copy_is_the_kept_lines_as_written(tmp_path, run_cli):
    src = tmp_path / "forms.jsonl"
    src.write_bytes("".join(JSONL_LINES).encode("utf-8"))
    out = tmp_path / "kept.jsonl"
    rc, _, err = run_cli("dedup", src, "--text", "question", "--out", out, "--max-rows", "3", "--quiet")
    assert rc == 0, err
    assert dropped_rows(tmp_path / "kept.jsonl.manifest.json") == [1]
    assert out.read_bytes() == (JSONL_LINES[0] + JSONL_LINES[2]).encode("utf-8")


def test_a_capped_copy_of_a_jsonl_folder_stops_inside_the_second_file(tmp_path, run_cli):
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes("".join(JSONL_LINES[:2]).encode("utf-8"))
    (folder / "b.jsonl").write_bytes("".join(JSONL_LINES[2:]).encode("utf-8"))
    out = tmp_path / "kept.jsonl"
    rc, _, err = run_cli("dedup", folder, "--text", "question", "--out", out, "--max-rows", "3", "--quiet")
    assert rc == 0, err
    assert out.read_bytes() == (JSONL_LINES[0] + JSONL_LINES[2]).encode("utf-8")


def test_a_capped_csv_copy_keeps_the_bom_the_sep_line_and_the_delimiter(tmp_path, run_cli):
    head = "\ufeffsep=;\r\nquestion;answer;id\r\n"
    records = [f"item {i % 10} alpha beta gamma;{i};id{i}\r\n" for i in range(30)]
    src = tmp_path / "weird.csv"
    src.write_bytes((head + "".join(records)).encode("utf-8"))
    out = tmp_path / "kept.csv"
    rc, _, err = run_cli("dedup", src, "--text", "question", "--threshold", "1", "--out", out,
                         "--max-rows", "17", "--quiet")
    assert rc == 0, err
    dropped = dropped_rows(tmp_path / "kept.csv.manifest.json")
    assert dropped == list(range(10, 17))
    kept = [text for i, text in enumerate(records[:17]) if i not in dropped]
    assert out.read_bytes() == (head + "".join(kept)).encode("utf-8")
