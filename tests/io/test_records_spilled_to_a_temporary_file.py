"""Past AUDITOR_SPILL_MIN bytes, the loaded records and the text column are kept in an unlinked
temporary file and read back through a memory map whose pages are handed back after each pass
(``io.spill``): every command's output is byte for byte the same as with everything in memory, no
file is left behind, what a pass read is not kept resident, and a folder that cannot take the
file is a clear error. From the session-49 memory work (issue 34, item 2)."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from auditor.errors import AuditorError
from auditor.io import spill
from auditor.io.columns import TextColumn, TextColumnBuilder
from auditor.io.table import Packer

IN_MEMORY = {"AUDITOR_SPILL_MIN": str(10 ** 15)}


def _outputs(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", ["scan", "dedup", "leak", "clean"])
def test_every_output_is_the_same_spilled_or_in_memory(real_data, run_cli, tmp_path, command):
    train, test = real_data / "gsm8k/train.jsonl", real_data / "gsm8k/test.jsonl"
    args = {"scan": ["scan", train, "--out-dir", "{out}/report"],
            "dedup": ["dedup", train, "--threshold", "0.5", "--out", "{out}/kept.jsonl", "--json", "{out}/dedup.json",
                      "--manifest", "{out}/dropped.jsonl"],
            "leak": ["leak", train, test, "--out-dir", "{out}/report"],
            "clean": ["clean", test, "--against", train, "--near", "--out", "{out}/clean.jsonl",
                      "--report", "{out}/clean-report.json"]}[command]
    results = []
    for name, env in (("spilled", {"AUDITOR_SPILL_MIN": "0"}), ("memory", IN_MEMORY)):
        out = tmp_path / name
        out.mkdir()
        spill_dir = tmp_path / f"{name}-spill"
        spill_dir.mkdir()
        code, stdout, stderr = run_cli(*[str(a).format(out=out) for a in args],
                                       "--quiet", env={**env, "AUDITOR_SPILL_DIR": str(spill_dir)}, timeout=300)
        assert code in (0, 1), stderr
        assert not list(spill_dir.iterdir())           # unlinked from the start: nothing left
        results.append((code, _outputs(out)))
    (code_a, files_a), (code_b, files_b) = results
    assert code_a == code_b and files_a.keys() == files_b.keys() and files_a
    for name in files_a:
        if name.endswith(".json"):       # the run's own seconds differ from run to run
            a, b = json.loads(files_a[name]), json.loads(files_b[name])
            for summary in (a, b):
                summary.pop("timings", None)
                summary.get("engine", {}).pop("seconds", None)
            assert a == b, name
        elif not name.endswith("REPORT.md"):
            assert files_a[name] == files_b[name], name


def _spilled_rss_kb() -> int:
    """Resident KiB of this process's maps of deleted files (a spilled buffer's file has no name)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                inside = line.rstrip().endswith("(deleted)")
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads Linux's /proc/self/smaps")
def test_a_pass_over_spilled_texts_and_records_leaves_them_on_disk(real_data, monkeypatch, tmp_path):
    monkeypatch.setenv("AUDITOR_SPILL_MIN", "0")
    monkeypatch.setenv("AUDITOR_SPILL_DIR", str(tmp_path))
    rows = [json.loads(line) for line in open(real_data / "gsm8k/train.jsonl", encoding="utf-8")] * 4
    texts = [row["question"] + " ünïcode" * (i % 7 == 0) for i, row in enumerate(rows)]
    builder = TextColumnBuilder()
    for lo in range(0, len(texts), 1000):
        builder.extend(texts[lo:lo + 1000])
    column = builder.column()
    packer = Packer()
    packer.add(rows)
    packed = packer.rows()
    assert isinstance(column._data, spill.SpilledMap) and isinstance(packed._data, spill.SpilledMap)
    assert not list(tmp_path.iterdir())
    before = _spilled_rss_kb()
    assert list(column) == texts                               # batches (Arrow)
    assert [column[i] for i in range(0, len(texts), 3)] == texts[::3]      # one by one
    assert column[5:len(texts) - 5] == texts[5:-5]
    assert list(packed) == rows and packed[7] == rows[7] and [r for _, b in packed.batches() for r in b] == rows
    # What the passes read is not held: each ~18 MB buffer keeps well under a MiB mapped.
    assert _spilled_rss_kb() - before < 2048
    # A job's result crosses to the Space's server as bytes, and reads back the same.
    # (At protocol 5, as the app's job sends it, straight from the map's pages.)
    for protocol in (4, 5):
        column_copy = pickle.loads(pickle.dumps(column, protocol=protocol))
        packed_copy = pickle.loads(pickle.dumps(packed, protocol=protocol))
        assert isinstance(column_copy._data, bytes) and column_copy == texts
        assert isinstance(packed_copy._data, bytes) and packed_copy == rows
    assert column.take([3, 1, 2]) == [texts[3], texts[1], texts[2]]
    assert packed.take([9, 0]) == [rows[9], rows[0]]


def test_small_buffers_stay_in_memory(monkeypatch):
    monkeypatch.delenv("AUDITOR_SPILL_MIN", raising=False)
    column = TextColumn.of(["a few words"] * 100)
    assert isinstance(column._data, bytes)
    packer = Packer()
    packer.add([{"text": "x"}] * 100)
    assert isinstance(packer.rows()._data, bytes)


def test_a_spill_folder_that_cannot_take_the_file_is_a_clear_error(real_data, run_cli, tmp_path, monkeypatch):
    missing = tmp_path / "no-such-folder"
    code, stdout, stderr = run_cli("scan", real_data / "gsm8k/test.jsonl", "--quiet",
                                   env={"AUDITOR_SPILL_MIN": "0", "AUDITOR_SPILL_DIR": str(missing)})
    assert code == 2
    assert "Traceback" not in stderr
    assert "temporary file" in stderr and "AUDITOR_SPILL_DIR" in stderr and str(missing) in stderr
    monkeypatch.setenv("AUDITOR_SPILL_DIR", str(missing))
    monkeypatch.setenv("AUDITOR_SPILL_MIN", "0")
    with pytest.raises(AuditorError) as caught:
        spill.SpillBuffer().write(b"x")
    assert caught.value.code == "spill_failed"


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 24])
def test_the_late_field_search_reads_a_chunk_at_a_time_and_finds_keys_across_chunks(monkeypatch, tmp_path, chunk):
    """``PackedRows.first_with_keys`` searches the spilled pickles SEARCH_CHUNK bytes at a time;
    a key that straddles two chunks is still found, at the same record as one search of all."""
    monkeypatch.setenv("AUDITOR_SPILL_MIN", "0")
    monkeypatch.setenv("AUDITOR_SPILL_DIR", str(tmp_path))
    rows = [{"question": f"q{i}"} for i in range(300)]
    rows[157]["rationale"] = "late"
    rows[211]["options_long_field_name"] = ["a", "b"]
    packer = Packer()
    packer.add(rows)
    packed = packer.rows()
    names = ["rationale", "options_long_field_name", "absent"]
    want = {"rationale": 157, "options_long_field_name": 211}
    monkeypatch.setattr(type(packed), "SEARCH_CHUNK", chunk)
    assert packed.first_with_keys(names) == want
    assert packed.first_with_keys(names, start=158) == {"options_long_field_name": 211}
