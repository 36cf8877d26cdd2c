"""The reading budget (AUDITOR_MAX_BYTES): gzip bombs and huge lines refused within it, small
values charged what they cost in memory (measured against the records as Python objects), a
file over the budget refused with the way out."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import auditor
from auditor import AuditorError
from auditor.io import budget
from conftest import REPO


APPLE_ROWS = [{"text": f"some words here about apples number {i}", "answer": str(i)} for i in range(300)]
JSONL = "".join(json.dumps(r) + "\n" for r in APPLE_ROWS).encode()
MB = 1 << 20


def _assert_refused(rc, err, fragment):
    assert rc == 2, err[-600:]
    assert "Traceback" not in err, err[-2000:]
    assert fragment in err, err[-600:]


def _bomb(path: Path, head: bytes, block: bytes, times: int, tail: bytes = b"") -> int:
    """A gzip file of ``times`` copies of one compressed member: tiny on disk, huge decompressed."""
    member = gzip.compress(block, 9)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(times):
            fh.write(member)
        if tail:
            fh.write(gzip.compress(tail))
    return len(head) + len(block) * times + len(tail)


CHILD = """
import resource, sys, time
import auditor
started = time.perf_counter()
try:
    auditor.load(sys.argv[1], max_rows=None if sys.argv[2] == '-' else int(sys.argv[2]))
    print('LOADED')
except auditor.AuditorError as exc:
    print(exc.code, exc.message)
try:    # this process's own peak (ru_maxrss would include the parent's pages from before exec)
    peak = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:'))
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print('PEAK_KB', peak)
print('SECONDS', time.perf_counter() - started)
"""


CAP = 64 * MB


def _load_in_child(path: Path, max_rows="-") -> tuple[str, float, float]:
    env = {**os.environ, "AUDITOR_MAX_BYTES": "64M",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(max_rows)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    peak = int(next(x for x in lines if x.startswith("PEAK_KB")).split()[1]) * 1024
    seconds = float(next(x for x in lines if x.startswith("SECONDS")).split()[1])
    return lines[0], peak, seconds


# name -> (head, repeated block, copies, tail, what the refusal says, peak RSS allowed): each
# decompresses to about 1 GiB, 16 times the 64 MiB budget.
BOMBS = {
    "blank_lines.jsonl.gz": (b"", b"\n" * (16 * MB), 64, b"", "reading limit of 64 MiB", CAP // 2),
    "empty_objects.jsonl.gz": (b"", b"{}\n" * (5 * MB), 64, b"", "reading limit of 64 MiB", CAP // 2),
    "json_list.json.gz": (b"[", b'{"t": 1},' * (2 * MB), 55, b'{"t": 1}]', "reading limit of 64 MiB", CAP // 2),
    "records.jsonl.gz": (b"", b'{"text": "a b c d"}\n' * MB, 50, b"", "reading limit of 64 MiB", CAP + 48 * MB),
    "records.csv.gz": (b"text\n", b"a b c\n" * (3 * MB), 55, b"", "reading limit of 64 MiB", CAP + 48 * MB),
    "one_line.jsonl.gz": (b'{"text": "', b"a" * (16 * MB), 64, b"", "line 1: longer than 4 MiB", CAP // 2),
    "one_cell.csv.gz": (b'text\n"', b"a" * (16 * MB), 64, b"", "line 2: longer than 4 MiB", CAP // 2),
}


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


def _parquet(path: Path, table) -> None:
    import pyarrow.parquet as pq
    pq.write_table(table, path)


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_max_bytes_sizes_and_threads(monkeypatch):
    """From the hostile-input review."""
    from auditor import parallel
    from auditor.io import budget, sources
    for raw, value in (("64M", 64 * MB), ("2G", 2 << 30), ("1GiB", 1 << 30), ("512k", 512 << 10), ("12345", 12345)):
        monkeypatch.setenv("AUDITOR_MAX_BYTES", raw)
        assert budget.max_bytes() == value
    monkeypatch.setenv("AUDITOR_THREADS", "3")
    assert parallel._workers() == 3
    monkeypatch.setenv("AUDITOR_THREADS", "100000")
    with pytest.warns(UserWarning, match="using 64"):
        assert parallel._workers() == 64


def test_a_tiny_byte_limit_is_a_clear_error(run_cli, tmp_path):
    """From the hostile-input review."""
    path = tmp_path / "ok.jsonl"
    path.write_bytes(JSONL)
    rc, _, err = run_cli("scan", path, "--quiet", env={"AUDITOR_MAX_BYTES": "1000"})
    _assert_refused(rc, err, "AUDITOR_MAX_BYTES")
    assert "--max-rows" in err            # no row cap was given: a row cap is a way out
    rc, _, err = run_cli("scan", path, "--quiet", "--max-rows", "250", env={"AUDITOR_MAX_BYTES": "1000"})
    _assert_refused(rc, err, "AUDITOR_MAX_BYTES")
    assert "row cap (250 rows) was not reached" in err and "cap the rows read" not in err


def test_out_of_memory_hint_never_suggests_the_row_cap_already_given():
    """From the hostile-input review."""
    from auditor import cli

    def boom(args):
        raise MemoryError

    old = cli.COMMANDS["scan"]
    cli.COMMANDS["scan"] = boom
    try:
        import contextlib
        import io
        for argv, wanted, unwanted in ((["scan", "x.jsonl"], "cap the rows read with --max-rows", "lower"),
                                       (["scan", "x.jsonl", "--max-rows", "5"], "lower --max-rows", "cap the rows")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                assert cli.main(argv) == 2
            assert wanted in err.getvalue() and unwanted not in err.getvalue()
    finally:
        cli.COMMANDS["scan"] = old


@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(BOMBS))
def test_gzip_bombs_and_huge_lines_are_refused_within_the_budget(tmp_path, name):
    """From the hostile-input review."""
    head, block, copies, tail, fragment, allowed = BOMBS[name]
    path = tmp_path / name
    size = _bomb(path, head, block, copies, tail)
    assert size >= 15 * CAP and path.stat().st_size < 4 * MB
    first, peak, seconds = _load_in_child(path)
    assert first.startswith("too_large") and fragment in first and "AUDITOR_MAX_BYTES" in first, first
    # Refused while streaming: memory stays within the budget (records cost about what the
    # budget charges for them; blank lines, empty objects and one long line cost next to nothing).
    assert peak < allowed, f"peak RSS {peak / MB:.0f} MiB for {name} (budget 64 MiB)"
    assert seconds < 60


def test_a_row_cap_reads_a_bomb_only_as_far_as_it_needs(tmp_path):
    """From the hostile-input review."""
    path = tmp_path / "records.jsonl.gz"
    _bomb(path, b"", b'{"text": "a b c d"}\n' * MB, 50)
    first, peak, _ = _load_in_child(path, 1000)
    assert first == "LOADED" and peak < 48 * MB


@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(TINY_VALUES))
def test_tiny_values_are_charged_what_they_hold_in_memory(tmp_path, monkeypatch, name):
    """From the round-4 review (hostile inputs)."""
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


@pytest.mark.sweep
@pytest.mark.parametrize("shape", ["boolean_columns", "list_column"])
def test_parquet_values_are_charged_before_they_become_python_objects(tmp_path, monkeypatch, shape):
    """From the round-4 review (hostile inputs)."""
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


def test_huge_file_without_a_cap_is_refused(tmp_path, monkeypatch):
    """From the odd-inputs review."""
    from auditor.io import budget, sources
    path = tmp_path / "huge.json"
    path.write_text(json.dumps([{"text": "x " * 100}] * 200), encoding="utf-8")
    monkeypatch.setattr(budget, "MAX_BYTES", 1000)
    with pytest.raises(AuditorError) as info:
        auditor.load(str(path))
    assert info.value.code == "too_large" and "--max-rows" in info.value.hint
    # With a row cap, reading streams and stops at the cap: a file far beyond the byte limit gives
    # its first rows (the limit counts what is read, in chunks of at most 1/16 of it or 64 KiB).
    jsonl = write_jsonl_str(tmp_path / "huge.jsonl", [{"text": "x " * 100}] * 2000)
    monkeypatch.setattr(budget, "MAX_BYTES", 200_000)
    with pytest.raises(AuditorError) as info:
        auditor.load(jsonl)
    assert info.value.code == "too_large" and "--max-rows" in info.value.hint
    table = auditor.load(jsonl, max_rows=5)
    assert len(table.rows) == 5 and table.truncated
