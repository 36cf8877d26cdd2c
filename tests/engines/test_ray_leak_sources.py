"""``leak --engine ray`` reads A with Ray Data's file-based reader from any source the Ray engine
takes (a directory, a file:// URI, a glob, gzip'd, JSON, CSV and Parquet shards), and each result
equals the local engine's on the same files: counts, matches, Jaccard scores, near pairs and A's
record fingerprint. The fingerprint is what catches a reader that types records its own way (Arrow's
JSON reader fills missing keys with nulls and unifies ints and floats), so the JSON shards hold
records of uneven shape. Ground truth: GSM8K test items planted at known rows of GSM8K train.

One local Ray (2 CPUs) serves the whole module; ``ray_session`` joins it and leaves it running.
"""
from __future__ import annotations

import csv
import gzip
import json

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor.distributed.leak import a_shards, ray_leak  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from auditor.settings import LeakSettings  # noqa: E402
from auditor.settings import NearSettings  # noqa: E402
from ray_leak_helpers import edit, local_ray, read  # noqa: E402,F401  (local_ray: autouse)

ROWS = 3000
# GSM8K train row -> (GSM8K test row, how it is planted); shards: 0-799 JSONL, 800-1399 JSON,
# 1400-2199 JSONL.gz, 2200-2599 Parquet, 2600-2999 CSV
PLANTED = {10: (0, "copy"), 900: (7, "edited"), 1500: (3, "copy"), 2300: (12, "copy"), 2700: (20, "copy")}
SETTINGS = LeakSettings(near=NearSettings(threshold=0.6))


def uneven(row: dict, i: int) -> dict:
    """Records of uneven shape, as real corpora have: extra nested fields on some, an int where
    others hold a float, a key that is missing elsewhere."""
    row = dict(row)
    if i % 7 == 0:
        row["meta"] = {"id": i, "tags": ["gsm8k", i], "source": {"split": "train"}}
    if i % 11 == 0:
        row["score"] = i if i % 2 else i + 0.5
    if i % 13 == 0:
        row["note"] = None
    return row


@pytest.fixture(scope="module")
def data(real_data, tmp_path_factory):
    train, test = read(real_data / "gsm8k/train.jsonl")[:ROWS], read(real_data / "gsm8k/test.jsonl")
    for row, (item, how) in PLANTED.items():
        source = test[item]
        train[row] = dict(source) if how == "copy" else {"question": edit(source["question"]), "answer": "42"}
    train = [uneven(r, i) if i < 1400 else r for i, r in enumerate(train)]
    root = tmp_path_factory.mktemp("ray_leak_sources")
    mixed = root / "mixed"
    mixed.mkdir()
    lines = [json.dumps(r) + "\n" for r in train]
    (mixed / "part-0.jsonl").write_text("".join(lines[:800]), encoding="utf-8")
    (mixed / "part-1.json").write_text(json.dumps(train[800:1400], indent=1), encoding="utf-8")
    with gzip.open(mixed / "part-2.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(lines[1400:2200])
    pq.write_table(pa.Table.from_pylist(train[2200:2600]), mixed / "part-3.parquet")
    with open(mixed / "part-4.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["question", "answer"])
        writer.writeheader()
        writer.writerows(train[2600:])
    gz = root / "gz"          # the same rows as three gzip'd shards, and a file the glob leaves out
    gz.mkdir()
    for k, (lo, hi) in enumerate(((0, 1000), (1000, 2000), (2000, ROWS))):
        with gzip.open(gz / f"part-{k}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(lines[lo:hi])
    (gz / "extra.jsonl").write_text("".join(lines[:50]), encoding="utf-8")
    return train, real_data / "gsm8k/test.jsonl", mixed, gz


def without_engine(summary: dict) -> dict:
    summary = dict(summary)
    summary.pop("engine")
    return summary


def assert_equal_to_local(on_ray, local, records: int) -> None:
    assert on_ray.engine["name"] == "ray"
    assert without_engine(on_ray.summary()) == local.summary()      # counts, fingerprints, roles, sample
    assert on_ray.matches == local.matches and on_ray.near.pairs == local.near.pairs
    assert on_ray.a.fingerprint == local.a.fingerprint and on_ray.a.records == local.a.records == records
    assert on_ray.evidence_csv() == local.evidence_csv()


def assert_planted_found(result, rows: dict) -> None:
    """Ground truth: each planted copy is an identical match, the edited one a near duplicate."""
    for row, (item, how) in rows.items():
        kind = "identical_text" if how == "copy" else "near_duplicate"
        assert row in result.matches[item][kind], (row, item, kind)


@pytest.fixture(scope="module")
def local_mixed(data):
    _, test_path, mixed, _ = data
    return leak(str(mixed), str(test_path), settings=SETTINGS)


def test_a_directory_of_mixed_shards_equals_local(data, local_mixed):
    train, test_path, mixed, _ = data
    on_ray = ray_leak(str(mixed), str(test_path), settings=SETTINGS, quiet=True)
    assert on_ray.engine["shards"] == 5
    assert_equal_to_local(on_ray, local_mixed, ROWS)
    assert_planted_found(on_ray, PLANTED)


def test_a_file_uri_equals_local(data, local_mixed):
    _, test_path, mixed, _ = data
    on_ray = ray_leak(mixed.as_uri(), str(test_path), settings=SETTINGS, quiet=True)
    assert on_ray.summary()["a"]["source"] == "mixed"               # the name, not this machine's folders
    assert_equal_to_local(on_ray, local_mixed, ROWS)


def test_a_glob_of_gzip_shards_equals_local(data):
    _, test_path, _, gz = data
    pattern = str(gz / "part-*.jsonl.gz")
    on_ray = ray_leak(pattern, str(test_path), settings=SETTINGS, quiet=True)
    assert on_ray.engine["shards"] == 3                                 # extra.jsonl is not matched
    assert_equal_to_local(on_ray, leak(pattern, str(test_path), settings=SETTINGS), ROWS)
    assert_planted_found(on_ray, PLANTED)


def test_a_parquet_shard_equals_local(data):
    _, test_path, mixed, _ = data
    shard = str(mixed / "part-3.parquet")
    on_ray = ray_leak(shard, str(test_path), settings=SETTINGS, quiet=True)
    assert_equal_to_local(on_ray, leak(shard, str(test_path), settings=SETTINGS), 400)
    assert_planted_found(on_ray, {2300 - 2200: PLANTED[2300]})


def test_a_corrupt_shard_behind_a_uri_is_named(data, tmp_path):
    _, test_path, mixed, _ = data
    bad = tmp_path / "bad"
    bad.mkdir()
    for path in mixed.iterdir():
        (bad / path.name).write_bytes(path.read_bytes())
    data_bytes = (bad / "part-3.parquet").read_bytes()
    (bad / "part-3.parquet").write_bytes(data_bytes[: len(data_bytes) // 2])     # a truncated download
    with pytest.raises(AuditorError) as caught:
        ray_leak(bad.as_uri(), str(test_path), settings=SETTINGS, quiet=True)
    assert caught.value.code == "bad_format" and "part-3.parquet" in caught.value.message


def test_uris_nobody_opens_and_missing_files_are_clear_errors(data):
    _, test_path, mixed, _ = data
    with pytest.raises(AuditorError) as caught:
        ray_leak("nosuchscheme://bucket/train", str(test_path), settings=SETTINGS, quiet=True)
    assert caught.value.code == "usage" and "nosuchscheme://bucket/train" in caught.value.message
    assert "pyarrow" in caught.value.message and "fsspec" in caught.value.message
    with pytest.raises(AuditorError) as caught:
        ray_leak((mixed / "missing").as_uri(), str(test_path), settings=SETTINGS, quiet=True)
    assert caught.value.code == "not_found"


def test_split_files_behind_a_uri_pick_train_as_locally(data, tmp_path):
    """train-/test- files in one folder act as splits, as the local loader reads them."""
    train, _, _, _ = data
    folder = tmp_path / "splits"
    folder.mkdir()
    for name in ("train-00000-of-00002.jsonl", "train-00001-of-00002.jsonl", "test-00000-of-00001.jsonl"):
        (folder / name).write_text(json.dumps(train[0]) + "\n", encoding="utf-8")
    _, shards, split, _ = a_shards(folder.as_uri(), None)
    assert split == "train" and [s.name for s in shards] == ["train-00000-of-00002.jsonl", "train-00001-of-00002.jsonl"]
    assert [s.index for s in shards] == [0, 1]
    _, shards, split, _ = a_shards(folder.as_uri(), "test")
    assert split == "test" and [s.name for s in shards] == ["test-00000-of-00001.jsonl"]


def test_odd_headers_read_as_locally(data, tmp_path):
    """A Parquet shard with a repeated column name and a semicolon-separated CSV shard: the Ray
    engine reads their records as the local engine does (question.1 kept; the CSV's columns split)."""
    train, test_path, _, _ = data
    folder = tmp_path / "odd"
    folder.mkdir()
    rows = train[2200:2600]
    questions = pa.array([r["question"] for r in rows])
    pq.write_table(pa.Table.from_arrays([questions, pa.array([r["answer"] for r in rows]), questions],
                                        names=["question", "answer", "question"]), folder / "part-0.parquet")
    with open(folder / "part-1.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["question", "answer"], delimiter=";")
        writer.writeheader()
        writer.writerows({"question": r["question"], "answer": r["answer"]} for r in train[2600:])
    on_ray = ray_leak(str(folder), str(test_path), settings=SETTINGS, quiet=True)
    local = leak(str(folder), str(test_path), settings=SETTINGS)
    assert local.a.table.rows[0]["question.1"] == rows[0]["question"]
    assert_equal_to_local(on_ray, local, len(rows) + len(train[2600:]))
    assert_planted_found(on_ray, {k - 2200: v for k, v in PLANTED.items() if k >= 2200})
