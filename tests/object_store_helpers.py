"""What the object-store tests share (tests/engines/test_ray_object_store.py: s3:// and hf://,
tests/engines/test_ray_gcs.py: gs://): the corpus's shards in a local folder, and the checks that a remote
``--engine ray`` run equals the local engine on that folder.

The corpus: real GSM8K train answers then HumanEval prompts, with four GSM8K test questions planted
at known rows (PLANTED), split into JSONL, two gzip'd JSONL and one Parquet shard (SHARDS), beside a
README.md that is not a shard."""
from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import real_data as real_data_files
from auditor.contamination import contamination

BUCKET = "auditor-corpus"
PLANTED = {0: 3, 5: 900, 17: 1650, 42: 2100}     # GSM8K test row -> the corpus row it is planted at
# The shards: name -> (first row, end row); JSONL, two gzip'd JSONL and Parquet.
SHARDS = {"part-0.jsonl": (0, 800), "part-1.jsonl.gz": (800, 1500), "part-2.jsonl.gz": (1500, 2000),
          "part-3.parquet": (2000, None)}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(local folder of the shards, texts in order): GSM8K train answers then HumanEval prompts,
    with GSM8K test questions planted at PLANTED's rows."""
    def read(rel, field):
        return [row[field] for row in real_data_files.rows(rel)]
    texts = read("gsm8k/train.jsonl", "answer")[:2100] + read("humaneval/HumanEval.jsonl", "prompt")
    questions = read("gsm8k/test.jsonl", "question")
    for item, row in PLANTED.items():
        texts[row] = questions[item]
    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    folder = tmp_path_factory.mktemp("object_store") / "corpus"
    folder.mkdir()
    for name, (lo, hi) in SHARDS.items():
        part = rows[lo:hi]
        if name.endswith(".parquet"):
            pq.write_table(pa.Table.from_pylist(part), folder / name)
        else:
            data = "".join(json.dumps(r) + "\n" for r in part).encode()
            (folder / name).write_bytes(gzip.compress(data, mtime=0) if name.endswith(".gz") else data)
    (folder / "README.md").write_text("not a shard\n", encoding="utf-8")
    return folder, texts


def comparable(summary: dict) -> dict:
    """summary.json without what differs by engine and source: the engine block, the source's name."""
    summary = json.loads(json.dumps(summary))
    summary.pop("engine", None)
    summary["corpus"].pop("source")
    return summary


def assert_equal_to_local(on_ray, local_source, source: str, shards: int) -> None:
    summary = on_ray.summary()
    assert summary["engine"]["name"] == "ray" and summary["engine"]["shards"] == shards
    assert summary["corpus"]["source"] == source
    assert comparable(summary) == comparable(contamination(str(local_source), "gsm8k").summary())


def assert_middle_shards_equal_local(uri_glob: str, local_glob) -> None:
    """A glob matching the corpus's middle two shards (rows 800-1999): the planted questions there,
    at rows numbered from the first matched shard's first row, none from outside, and the local
    engine's result on the same files."""
    from auditor.distributed.contamination import ray_contamination
    result = ray_contamination(uri_glob, "gsm8k", quiet=True)
    found = {it["benchmark_row"]: it["corpus_rows"] for it in result.items}
    assert 900 - 800 in found[5] and 1650 - 800 in found[17] and 0 not in found and 42 not in found
    assert_equal_to_local(result, local_glob, uri_glob, 2)


def assert_parquet_shard_equals_local(scheme: str, folder) -> None:
    """The corpus's one Parquet shard by itself (read with random access, not as a stream)."""
    from auditor.distributed.contamination import ray_contamination
    uri = f"{scheme}://{BUCKET}/corpus/part-3.parquet"
    result = ray_contamination(uri, "gsm8k", quiet=True)
    assert 2100 - 2000 in next(it for it in result.items if it["benchmark_row"] == 42)["corpus_rows"]
    assert_equal_to_local(result, folder / "part-3.parquet", uri, 1)


def planted_rows(result) -> dict:
    found = {it["benchmark_row"]: it["corpus_rows"] for it in result.items}
    return {item: row for item, row in PLANTED.items() if row in found.get(item, ())}


def assert_listing_is_local(scheme: str, folder, names: list) -> None:
    """The remote folder lists the local folder's shards ``names``: paths, sizes and formats
    (README.md left out)."""
    from auditor.io.shards import list_shards
    _, shards = list_shards(f"{scheme}://{BUCKET}/corpus/")
    assert [s.path for s in shards] == [f"{BUCKET}/corpus/{n}" for n in names]
    assert [s.size for s in shards] == [(folder / n).stat().st_size for n in names]
    assert [s.format for s in shards] == ["jsonl", "jsonl", "jsonl", "parquet"]


def assert_folder_equals_local(uri: str, folder, texts) -> None:
    """Contamination on the remote folder ``uri``: every planted question at its row, and the local
    engine's result on ``folder``."""
    from auditor.distributed.contamination import ray_contamination
    result = ray_contamination(uri, "gsm8k", quiet=True)
    assert planted_rows(result) == PLANTED                   # ground truth: every planted question at its row
    assert result.summary()["corpus"]["records"] == len(texts)
    assert_equal_to_local(result, folder, uri, 4)


def assert_leak_equals_local(uri: str, folder, test_path: str):
    """A leak with A read from the remote folder ``uri``: each planted copy found, and the local
    engine's summary, matches and evidence on ``folder``. Returns (on Ray, local)."""
    from auditor.distributed.leak import ray_leak
    from auditor.leakage import leak
    from auditor.settings import LeakSettings
    from auditor.settings import NearSettings
    settings = LeakSettings(near=NearSettings(threshold=0.6))
    on_ray = ray_leak(uri, test_path, settings=settings, quiet=True)
    local = leak(str(folder), test_path, settings=settings)
    for item, row in PLANTED.items():                        # ground truth: each planted copy is found
        assert row in on_ray.matches[item]["identical_text"]
    summary, expected = on_ray.summary(), local.summary()
    assert summary["a"]["source"] == uri
    for s in (summary, expected):
        s.pop("engine", None)
        s["a"].pop("source")
    assert summary == expected
    assert on_ray.matches == local.matches and on_ray.evidence_csv() == local.evidence_csv()
    return on_ray, local
