"""Hostile shards on ``--engine ray`` against the local engine on the same files, and against
planted ground truth: GSM8K test questions planted at known rows of GSM8K train texts.

Each case once failed (or silently differed) on Ray while the local engine read it: a dotted
(nested) text field read as missing on JSONL shards, JSON shards holding an object ({"data": [...]}
or columns) refused, CSV/TSV shards of a corpus silently left out, a first JSONL line longer than
1 MiB refused, a Parquet shard with a repeated column name or gzip'd refused, a file named
_part.jsonl skipped, UTF-16 / NUL / twice-gzipped shards reported less precisely, and a folder of
only hidden files, a pipe or a broken link reported as something else.

One local Ray (2 CPUs) serves the whole module; ``ray_session`` joins it and leaves it running.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import os

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor.contamination import contamination  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.io.shards import list_shards  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from auditor.settings import LeakSettings  # noqa: E402
from auditor.settings import NearSettings  # noqa: E402
from ray_leak_helpers import local_ray, read  # noqa: E402,F401  (local_ray: autouse)

ROWS = 600
# corpus row -> GSM8K test row planted there (one per shard of the mixed folder below)
PLANTED = {5: 0, 130: 3, 260: 7, 390: 12, 520: 20}


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture(scope="module")
def data(real_data):
    train = read(real_data / "gsm8k/train.jsonl")[:ROWS]
    test = read(real_data / "gsm8k/test.jsonl")
    rows = [{"question": r["question"], "answer": r["answer"]} for r in train]
    for row, item in PLANTED.items():
        rows[row] = {"question": test[item]["question"], "answer": test[item]["answer"]}
    return rows, test, real_data / "gsm8k/test.jsonl"


def without_engine(summary: dict) -> dict:
    summary = dict(summary)
    assert summary.pop("engine")["name"] == "ray"
    return summary


def assert_contamination_as_local(source, rows: int, planted: dict, **kwargs) -> dict:
    """summary.json of both engines equal apart from Ray's engine block, and every planted
    question found at its row."""
    on_ray = without_engine(ray_contamination(str(source), "gsm8k", quiet=True, **kwargs).summary())
    assert on_ray == contamination(str(source), "gsm8k", **kwargs).summary()
    assert on_ray["corpus"]["records"] == rows and on_ray["corpus"]["no_words"] == 0
    found = {it["benchmark_row"]: it["corpus_rows"] for it in on_ray["items"]}
    for row, item in planted.items():
        assert row in found[item], (row, item)
    return on_ray


def test_a_nested_text_field_of_jsonl_shards_is_read_as_locally(data, tmp_path):
    """--text meta.text: Ray's Arrow fast path took the dotted name as a key of its own and read
    every text as missing (0 tokens, every record without words) where the local engine nests."""
    rows, _, _ = data
    folder = tmp_path / "nested"
    folder.mkdir()
    nested = [{"meta": {"text": r["question"]}, "answer": r["answer"]} for r in rows]
    (folder / "part-0.jsonl").write_text(jsonl(nested[:300]), encoding="utf-8")
    with gzip.open(folder / "part-1.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(jsonl(nested[300:]))
    summary = assert_contamination_as_local(folder, ROWS, PLANTED, corpus_text="meta.text")
    assert summary["corpus"]["text"] == "meta.text"


def test_json_objects_csv_tsv_and_underscore_shards_are_read_as_locally(data, tmp_path):
    """A corpus folder of every shape the local engine reads: a JSONL file named _part (not
    hidden), {"version": 2, "data": [...]}, an object of equal-length columns, a semicolon-separated
    .csv and a .tsv. Ray refused the JSON objects and silently left the CSV/TSV out. Two texts hold a
    lone surrogate (valid JSON, not encodable as UTF-8), which Ray's Arrow column refused."""
    rows, _, _ = data
    rows = [dict(r) for r in rows]
    for row in (40, 150):
        rows[row]["question"] += " \ud800 end"
    folder = tmp_path / "shapes"
    folder.mkdir()
    (folder / "_part.jsonl").write_text(jsonl(rows[:120]), encoding="utf-8")
    (folder / "a_data.json").write_text(json.dumps({"version": 2, "data": rows[120:240]}), encoding="utf-8")
    part = rows[240:360]
    (folder / "b_columns.json").write_text(json.dumps({k: [r[k] for r in part] for k in ("question", "answer")}),
                                           encoding="utf-8")
    for name, delimiter, lo, hi in (("c_semicolon.csv", ";", 360, 480), ("d_tabs.tsv", "\t", 480, ROWS)):
        with open(folder / name, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["question", "answer"], delimiter=delimiter)
            writer.writeheader()
            writer.writerows(rows[lo:hi])
    (folder / ".hidden.jsonl").write_text(jsonl(rows[:50]), encoding="utf-8")      # skipped by both
    _, shards = list_shards(str(folder))
    # (the default listing: JSONL, JSON, Parquet; contamination lists CSV and TSV too)
    assert [s.name for s in shards] == ["_part.jsonl", "a_data.json", "b_columns.json"]
    summary = assert_contamination_as_local(folder, ROWS, PLANTED)
    assert summary["corpus"]["text"] == "question"


def test_long_first_line_repeated_parquet_column_and_gzipped_parquet(data, tmp_path):
    """A first JSONL record longer than 1 MiB (the driver read a fixed 1 MiB head and called the
    cut line bad JSON), a Parquet shard whose text column name is repeated, and a gzip'd Parquet
    shard (its sample was read without decompressing it)."""
    rows, _, _ = data
    folder = tmp_path / "odd"
    folder.mkdir()
    long_record = {"question": "word " * 300_000, "answer": "0"}        # 1.5 MB on one line
    (folder / "a.jsonl").write_text(jsonl([long_record] + rows[1:200]), encoding="utf-8")
    part = rows[200:400]
    questions = pa.array([r["question"] for r in part])
    pq.write_table(pa.Table.from_arrays([questions, pa.array([r["answer"] for r in part]), questions],
                                        names=["question", "answer", "question"]), folder / "b.parquet")
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows[400:]), buffer)
    (folder / "c.parquet.gz").write_bytes(gzip.compress(buffer.getvalue()))
    planted = {row: item for row, item in PLANTED.items() if row}
    assert_contamination_as_local(folder, ROWS, planted)


def test_leak_reads_underscore_and_unicode_named_shards_as_locally(data, tmp_path):
    rows, test, test_path = data
    folder = tmp_path / "a side"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "_part.jsonl").write_text(jsonl(rows[:300]), encoding="utf-8")
    with gzip.open(folder / "données ✓.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(jsonl(rows[300:]))
    (folder / ".ipynb_checkpoints" / "_part-checkpoint.jsonl").write_text(jsonl(rows), encoding="utf-8")
    settings = LeakSettings(near=NearSettings(threshold=0.6))
    on_ray = ray_leak(str(folder), str(test_path), settings=settings, quiet=True)
    local = leak(str(folder), str(test_path), settings=settings)
    assert without_engine(on_ray.summary()) == local.summary()
    assert on_ray.a.records == ROWS
    for row, item in PLANTED.items():
        assert row in on_ray.matches[item]["identical_text"], (row, item)


def _utf16(rows):
    return jsonl(rows).encode("utf-16")


def _nul(rows):
    return jsonl(rows[:10]).encode() + b"\x00" + jsonl(rows[10:]).encode()


@pytest.mark.parametrize("name, content, says", [
    ("part.jsonl", _utf16, "UTF-16"),
    ("part.jsonl", _nul, "NUL byte"),
    ("part.jsonl.gz", lambda rows: gzip.compress(gzip.compress(jsonl(rows).encode())), "gzip-compressed twice"),
])
def test_a_shard_that_is_not_utf8_text_fails_as_locally(data, tmp_path, name, content, says):
    rows, _, _ = data
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "a.jsonl").write_text(jsonl(rows[:50]), encoding="utf-8")
    (folder / name).write_bytes(content(rows[50:100]))
    with pytest.raises(AuditorError) as on_ray:
        ray_contamination(str(folder), "gsm8k", quiet=True)
    with pytest.raises(AuditorError) as local:
        contamination(str(folder), "gsm8k")
    assert on_ray.value.code == local.value.code == "bad_format"
    assert on_ray.value.message == local.value.message
    assert name in on_ray.value.message and says in on_ray.value.message


def test_listing_errors_say_what_is_wrong(tmp_path):
    """A folder of hidden files only, a named pipe, a broken link: the error says so (Ray said
    "unsupported file type" for the first, "holds no shards" for the pipe)."""
    hidden = tmp_path / "only_hidden"
    hidden.mkdir()
    (hidden / ".a.jsonl").write_text('{"text": "x"}\n', encoding="utf-8")
    with pytest.raises(AuditorError) as caught:
        list_shards(str(hidden))
    assert caught.value.code == "not_found" and "holds no" in caught.value.message and "hidden" in caught.value.hint
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(AuditorError) as caught:
        list_shards(str(pipe))
    assert caught.value.code == "bad_format" and "not a regular file" in caught.value.message
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "missing.jsonl")
    with pytest.raises(AuditorError) as caught:
        list_shards(str(link))
    assert caught.value.code == "not_found" and "symbolic link" in caught.value.message


def test_cli_a_bad_shard_is_one_message_and_exit_2(data, tmp_path, run_cli):
    rows, _, _ = data
    folder = tmp_path / "cli"
    folder.mkdir()
    (folder / "a.jsonl").write_text(jsonl(rows[:50]), encoding="utf-8")
    (folder / "b.jsonl").write_bytes(_utf16(rows[50:100]))
    code, out, err = run_cli("contamination", folder, "--benchmark", "gsm8k", "--engine", "ray", "--quiet",
                             "--ray-address", ray.get_runtime_context().gcs_address, timeout=300)
    assert code == 2 and "Traceback" not in err and not out
    assert "b.jsonl" in err and "UTF-16" in err and len(err.strip().splitlines()) <= 3, err     # message + hint


def test_a_uri_glob_skips_hidden_folders_as_a_local_glob_does(tmp_path):
    """s3://b/d and s3://b/d/**/*.jsonl must list the same data: checkpoint copies and .git below a
    URI glob's folder part are skipped as glob.glob skips them locally (here on fsspec's memory://)."""
    import fsspec
    memory = fsspec.filesystem("memory")
    local = tmp_path / "d"
    for rel in ("a.jsonl", "sub/b.jsonl", ".ipynb_checkpoints/a-checkpoint.jsonl", "sub/.git/x.jsonl"):
        memory.pipe(f"/hiddenglob/d/{rel}", b'{"text": "x"}\n')
        (local / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / rel).write_bytes(b'{"text": "x"}\n')
    try:
        def names(source):
            return [s.name.split("hiddenglob/d/")[-1] for s in list_shards(source)[1]]
        assert names("memory://hiddenglob/d/**/*.jsonl") == ["a.jsonl", "sub/b.jsonl"]
        assert names("memory://hiddenglob/d") == ["a.jsonl", "sub/b.jsonl"]
        assert [s.name for s in list_shards(str(local / "**" / "*.jsonl"))[1]] == ["a.jsonl", "sub/b.jsonl"]
    finally:
        memory.rm("/hiddenglob", recursive=True)


def test_a_missing_field_names_the_dataset_as_locally(data, tmp_path):
    folder = tmp_path / "named_corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"question": "q"}) + "\n", encoding="utf-8")
    with pytest.raises(AuditorError) as on_ray:
        ray_contamination(str(folder), "gsm8k", corpus_text="nope", quiet=True)
    with pytest.raises(AuditorError) as local:
        contamination(str(folder), "gsm8k", corpus_text="nope")
    assert on_ray.value.message == local.value.message and on_ray.value.message.startswith("named_corpus: ")
    from auditor.settings import RoleNames
    b = tmp_path / "b.jsonl"
    b.write_text(json.dumps({"nope": "q"}) + "\n", encoding="utf-8")         # B has the field, A does not
    with pytest.raises(AuditorError) as on_ray:
        ray_leak(str(folder), str(b), settings=LeakSettings(roles_a=RoleNames(text="nope")), quiet=True)
    assert on_ray.value.message.startswith("named_corpus: ") and "'nope'" in on_ray.value.message


@pytest.mark.sweep
def test_every_codec_reads_the_same_records_on_both_engines(data, tmp_path):
    """A folder of shards in every compression both engines read (.gz .bz2 .xz .zst .lz4 .br, and
    plain): the same records and findings locally and on Ray (xz has no Arrow codec)."""
    import bz2
    import lzma
    rows, _, test_path = data
    folder = tmp_path / "codecs"
    folder.mkdir()
    cuts = [len(rows) * k // 7 for k in range(8)]
    parts = [jsonl(rows[lo:hi]).encode() for lo, hi in zip(cuts, cuts[1:])]
    (folder / "p0.jsonl").write_bytes(parts[0])
    (folder / "p1.jsonl.gz").write_bytes(gzip.compress(parts[1]))
    (folder / "p2.jsonl.bz2").write_bytes(bz2.compress(parts[2]))
    (folder / "p3.jsonl.xz").write_bytes(lzma.compress(parts[3]))
    for k, (suffix, codec) in enumerate(((".zst", "zstd"), (".lz4", "lz4"), (".br", "brotli")), start=4):
        with pa.CompressedOutputStream(str(folder / f"p{k}.jsonl{suffix}"), codec) as out:
            out.write(parts[k])
    assert_contamination_as_local(folder, len(rows), PLANTED)
    settings = LeakSettings(near=NearSettings(threshold=0.6))
    on_ray = ray_leak(str(folder), str(test_path), settings=settings, quiet=True)
    local = leak(str(folder), str(test_path), settings=settings)
    assert without_engine(on_ray.summary()) == local.summary() and local.a.records == len(rows)
    for row, item in PLANTED.items():
        assert row in local.matches[item]["identical_text"]
