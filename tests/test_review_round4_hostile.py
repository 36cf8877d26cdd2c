"""Review round 4, hostile inputs against the engine's resource bounds and trust (CLI and library).

- The reading budget (AUDITOR_MAX_BYTES) charged bytes and records only, so a file of tiny values
  ("[]," is 3 bytes and about 64 in memory; an empty CSV cell 1 byte and a dict slot; a Parquet
  file of boolean columns a few bits a row) was loaded at 10-250 times its charge: measured, a
  60 MB JSONL of empty lists held 1.46 GB, a 1 MB Parquet file of 3,000 boolean columns 3 GB.
  Each value is now charged at least budget.VALUE_BYTES. The ground truth here is the size of
  the records as Python objects, measured in the test (sys.getsizeof over the parsed records).
- A NUL character (JSON "\\u0000") was written raw into dedup/clean CSV output and the leak
  evidence CSV: files the auditor itself then refused as binary.
- A glob with "**/**" read every file once per "**" (every record became an exact duplicate),
  took time exponential in the number of "**", and a symbolic-link loop under "**" never ended.
"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import auditor
from auditor.io import budget, sources
from auditor.errors import AuditorError

REPO = Path(__file__).resolve().parents[1]


def python_size(obj) -> int:
    """Bytes the object graph takes as Python objects (each object counted once)."""
    seen, total, stack = set(), 0, [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
    return total


def _jsonl_lists(n_rows: int, width: int) -> str:
    return "".join('{"text": "row %d words", "f": [%s]}\n' % (i, ",".join(["[]"] * width)) for i in range(n_rows))


def _jsonl_wide(n_rows: int, width: int) -> str:
    keys = ",".join(f'"k{k}": 0' for k in range(width))
    return "".join('{"text": "row %d words", %s}\n' % (i, keys) for i in range(n_rows))


def _json_objects(n_rows: int, width: int) -> str:
    return json.dumps([{"text": f"row {i} words", "f": [{}] * width} for i in range(n_rows)])


def _separated(n_rows: int, width: int, sep: str) -> str:
    header = sep.join(["text", *(f"c{k}" for k in range(width))])
    return header + "\n" + "".join(f"row {i} words" + sep * width + "\n" for i in range(n_rows))


def _parse(name: str, text: str) -> list:
    """The records as plain Python builds them (the ground truth's objects)."""
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if name.endswith(".json"):
        return json.loads(text)
    reader = csv.reader(io.StringIO(text), delimiter="\t" if name.endswith(".tsv") else ",")
    header = next(reader)
    return [dict(zip(header, row)) for row in reader]


TINY_VALUES = {
    "empty_lists.jsonl": lambda: _jsonl_lists(40, 20_000),
    "wide_keys.jsonl": lambda: _jsonl_wide(200, 2_000),
    "empty_objects.json": lambda: _json_objects(40, 20_000),
    "empty_cells.csv": lambda: _separated(400, 3_000, ","),
    "empty_cells.tsv": lambda: _separated(400, 3_000, "\t"),
}


@pytest.mark.parametrize("name", sorted(TINY_VALUES))
def test_tiny_values_are_charged_what_they_hold_in_memory(tmp_path, monkeypatch, name):
    text = TINY_VALUES[name]()
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    size, held = path.stat().st_size, python_size(_parse(name, text))
    assert held > 5 * size                      # the hostile shape: far more in memory than on disk
    cap = 2 * size + 256 * 5_000                # room for the bytes and every record, not the objects
    assert cap * 2 < held
    monkeypatch.setattr(budget, "MAX_BYTES", cap)
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path))
    assert info.value.code == "too_large" and "per value" in info.value.message
    # Control: prose of the same size, as many records, loads under the same budget.
    prose = tmp_path / ("prose" + path.suffix)
    rows = _parse(name, text)
    filler = "lorem ipsum, dolor sit amet " * (size // len(rows) // 28 + 1)
    if name.endswith((".csv", ".tsv")):
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter="\t" if name.endswith(".tsv") else ",", lineterminator="\n")
        writer.writerows([["text"], *([f"{filler}{i}"] for i in range(len(rows)))])
        prose.write_text(buf.getvalue(), encoding="utf-8")
    elif name.endswith(".json"):
        prose.write_text(json.dumps([{"text": f"{filler}{i}"} for i in range(len(rows))]), encoding="utf-8")
    else:
        prose.write_text("".join(json.dumps({"text": f"{filler}{i}"}) + "\n" for i in range(len(rows))),
                         encoding="utf-8")
    assert abs(prose.stat().st_size - size) < size
    assert len(auditor.load(str(prose)).rows) == len(rows)
    # With room for its values the hostile file reads whole, each record as json/csv reads it.
    monkeypatch.setattr(budget, "MAX_BYTES", 8 * held)
    assert auditor.load(str(path)).rows == rows


def _parquet(path: Path, table) -> None:
    import pyarrow.parquet as pq
    pq.write_table(table, path)


@pytest.mark.parametrize("shape", ["boolean_columns", "list_column"])
def test_parquet_values_are_charged_before_they_become_python_objects(tmp_path, monkeypatch, shape):
    import numpy as np
    import pyarrow as pa
    n = 2_000
    if shape == "boolean_columns":
        columns = {"text": pa.array([f"row {i} words" for i in range(n)])}
        columns.update({f"c{k}": pa.array(np.zeros(n, dtype=bool)) for k in range(500)})
        table = pa.table(columns)
    else:
        table = pa.table({"text": pa.array([f"row {i} words" for i in range(n)]),
                          "f": pa.array([np.zeros(2_000, dtype=np.int8)] * n, type=pa.list_(pa.int8()))})
    path = tmp_path / f"{shape}.parquet"
    _parquet(path, table)
    held = python_size(table.to_pylist())
    cap = 2 * table.nbytes + 256 * n            # the Arrow bytes and every record
    assert cap * 2 < held
    monkeypatch.setattr(budget, "MAX_BYTES", cap)
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path))
    assert info.value.code == "too_large" and "per value" in info.value.message
    rows = auditor.load(str(path), max_rows=3).rows
    assert [r["text"] for r in rows] == ["row 0 words", "row 1 words", "row 2 words"]
    monkeypatch.setattr(budget, "MAX_BYTES", 64 * held)         # enough: read whole, unchanged
    assert auditor.load(str(path)).rows[5] == table.slice(5, 1).to_pylist()[0]


# --------------------------------------------------------------------------- NUL characters in CSV output

ODD = [{"text": "alpha beta gamma delta epsilon", "answer": "1"},
       {"text": "a text holding a nul \u0000 character here", "answer": "2"},
       {"text": "alpha beta gamma delta epsilon", "answer": "1"},
       {"text": "something else entirely different words", "answer": "3"}]


def _write_odd(path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in ODD), encoding="utf-8")   # "\u0000" escaped


@pytest.mark.parametrize("argv", [["dedup", "IN", "--out", "OUT"],
                                  ["clean", "IN", "--against", "OTHER", "--out", "OUT"]])
def test_a_nul_character_is_never_written_raw_into_a_csv(tmp_path, run_cli, argv):
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
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write_odd(a)
    _write_odd(b)
    evidence = tmp_path / "evidence.csv"
    rc, _, err = run_cli("leak", a, b, "--text", "text", "--evidence", evidence, "--quiet")
    assert rc == 0, err
    data = evidence.read_bytes()
    assert b"\x00" not in data
    cells = [c for row in csv.reader(io.StringIO(data.decode("utf-8"))) for c in row]
    assert ODD[1]["text"].replace("\x00", "\\u0000") in cells
    assert len(auditor.load(str(evidence)).rows) >= 1           # the auditor reads its own file


# --------------------------------------------------------------------------- globs with "**"

def _tree(root: Path) -> dict:
    """Three data files in nested folders, a hidden one, and the lines each holds."""
    files = {"top.jsonl": 3, "a/mid.jsonl": 4, "a/b/deep.jsonl": 5}
    for rel, n in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"text": f"{rel} record {i} words"}) + "\n" for i in range(n)),
                        encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.jsonl").write_text(json.dumps({"text": "hidden"}) + "\n", encoding="utf-8")
    return files


@pytest.mark.parametrize("pattern", ["**/*.jsonl", "**/**/*.jsonl", "**/**/**/**/**/**/**/**/*.jsonl",
                                     "a/**/*.jsonl", "**"])
def test_a_glob_reads_each_file_once(tmp_path, pattern):
    files = _tree(tmp_path)
    expected = {rel: n for rel, n in files.items() if pattern != "a/**/*.jsonl" or rel.startswith("a/")}
    table = auditor.load(str(tmp_path / pattern))
    assert len(table.rows) == sum(expected.values())
    assert sorted(r["text"] for r in table.rows) == sorted(
        f"{rel} record {i} words" for rel, n in expected.items() for i in range(n))


def test_a_link_loop_under_a_glob_ends_and_reads_each_file_once(tmp_path):
    files = _tree(tmp_path / "data")
    os.symlink("..", tmp_path / "data" / "a" / "up")            # a loop: data/a/up/a/up/...
    os.symlink(".", tmp_path / "data" / "self")
    code = ("import auditor, sys\n"
            "t = auditor.load(sys.argv[1])\n"
            "print(len(t.rows), len({r['text'] for r in t.rows}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data" / "**" / "*.jsonl")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [str(sum(files.values()))] * 2


def test_an_output_checked_against_a_glob_of_many_stars_is_answered(tmp_path):
    """check_outputs matches the output against an input glob: a pattern of many "**" is answered
    (it took time exponential in their number), in a child so a regression fails, not hangs."""
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(25)])
    deep.mkdir(parents=True)
    pattern = str(tmp_path / ("**/" * 20 + "*.jsonl"))
    code = ("import sys\nfrom auditor.io.outputs import check_outputs\n"
            "check_outputs([sys.argv[1]], [('--out', sys.argv[2])])\nprint('OK')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, pattern, str(deep / "out.parquet")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.strip() == "OK", proc.stderr[-2000:]
    proc = subprocess.run([sys.executable, "-c", code, pattern, str(deep / "out.jsonl")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode != 0 and "matches the input pattern" in proc.stderr
