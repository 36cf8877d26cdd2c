"""Folders written by Spark / Hadoop / Dask: exactly the part files are read (``_SUCCESS``,
checksums, metadata and ``_temporary/`` attempt files are not data), by the local engine and the
Ray listing, locally and on S3; ground truth: the part files' own rows read with pandas."""
from __future__ import annotations

import json
import re
from pathlib import Path
import pandas as pd
import pytest
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
import real_data  # noqa: E402
from auditor.io import sources
from auditor.cli import main  # noqa: E402
from auditor.contamination import contamination  # noqa: E402
from auditor.io.shards import RECORD_FORMATS, list_shards, open_shard, record_batches, split_shards  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402


TRAIN = real_data.rows("gsm8k/train.jsonl")
TEST = real_data.rows("gsm8k/test.jsonl")
PARTS = ("part-00000-7c1e-4b2a.c000.snappy.parquet", "part-00001-7c1e-4b2a.c000.snappy.parquet")
ATTEMPT = "_temporary/0/_temporary/attempt_202612021200_0003_m_000002_5/part-00002-7c1e-4b2a.c000.snappy.parquet"


def _grams(text: str, n: int = 5) -> set:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([{"question": r["question"], "answer": r["answer"]} for r in rows]), path)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    """(folder, the committed rows as pandas reads the part files, the benchmark rows planted in
    _temporary/ only). Part 0 holds GSM8K test item 0 (committed: contamination must find it)."""
    folder = tmp_path_factory.mktemp("spark") / "out.parquet"
    _write(folder / PARTS[0], TRAIN[:150] + [TEST[0]])
    _write(folder / PARTS[1], TRAIN[150:300])
    committed = pd.concat([pd.read_parquet(folder / p) for p in PARTS], ignore_index=True).to_dict("records")
    # benchmark items that share no 5-word sequence with the committed rows (the scan counts 13-word
    # ones): only the uncommitted attempt file can make them "contaminated"
    seen = set().union(*(_grams(r["question"]) | _grams(r["answer"]) for r in committed))
    planted = [i for i in range(1, len(TEST)) if not _grams(TEST[i]["question"]) & seen][:10]
    assert len(planted) == 10
    _write(folder / ATTEMPT, [TEST[i] for i in planted])
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "_committed_3322").write_text('{"added":["part-00000"],"removed":[]}')
    (folder / "_started_3322").write_bytes(b"")
    for part in PARTS:
        (folder / f".{part}.crc").write_bytes(b"crc\x00\x01")
    schema = pa.Table.from_pylist(committed[:1]).schema
    pq.write_metadata(schema, folder / "_common_metadata")
    pq.write_metadata(schema, folder / "_metadata")
    return folder, committed, planted


def test_the_local_engine_reads_exactly_the_part_files(spark):
    """From the round-5 review (readers)."""
    folder, committed, _ = spark
    table = sources.load(str(folder))
    assert table.rows == committed
    assert table.files == PARTS
    [notice] = table.notices
    assert "1 data file(s) in _temporary/ not read" in notice and "attempt_202612021200" in notice
    assert "no _SUCCESS" not in notice
    paths, _, notices, _ = sources.local_files(str(folder))
    assert [p.name for p in paths] == list(PARTS) and notices == [notice]


def test_the_ray_listing_is_the_same_set(spark):
    """From the round-5 review (readers)."""
    folder, committed, _ = spark
    _, shards = list_shards(str(folder), RECORD_FORMATS)
    assert [s.name for s in shards] == list(PARTS)
    assert {Path(s.path).resolve() for s in shards} == {p.resolve() for p in sources.expand_local(str(folder))}
    _, chosen, split, notices = split_shards(str(folder), None, RECORD_FORMATS)
    assert [s.name for s in chosen] == list(PARTS) and split is None
    assert len(notices) == 1 and "_temporary/" in notices[0] and "no _SUCCESS" not in notices[0]
    filesystem, _ = list_shards(str(folder))
    rows = [r for s in shards for batch in record_batches(open_shard(filesystem, s), s) for r in batch]
    assert rows == committed
    # the same through a glob whose wildcard matches _temporary/
    _, globbed = list_shards(str(folder) + "/**/*.parquet")
    assert [s.name for s in globbed] == list(PARTS)
    assert [p.name for p in sources.expand_local(str(folder) + "/**/*.parquet")] == list(PARTS)


def test_scan_contamination_and_leak_see_only_committed_rows(spark, tmp_path):
    """From the round-5 review (readers)."""
    folder, committed, planted = spark
    out = tmp_path / "scan.json"
    assert main(["scan", str(folder), "--json", str(out), "--quiet"]) == 0
    summary = json.loads(out.read_text())
    assert summary["input"]["records"] == len(committed) == 301
    assert summary["input"]["files"] == list(PARTS)
    assert any("_temporary/" in n for n in summary["input"]["notices"])

    result = contamination(str(folder), "gsm8k")
    found = {it["benchmark_row"]: it for it in result.items}
    assert result.corpus_records == len(committed)
    assert 150 in found[0]["corpus_rows"]                    # the committed plant, at its row
    assert not set(planted) & set(found)                     # the uncommitted ones: not data
    assert any("_temporary/" in n for n in result.corpus["notices"])

    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps(TEST[i]) + "\n" for i in [0, *planted]))
    out = tmp_path / "leak.json"
    main(["leak", str(folder), str(b), "--json", str(out), "--quiet"])
    leak = json.loads(out.read_text())
    assert leak["a"]["records"] == len(committed)
    assert leak["identical_text"]["records"] == 1           # TEST[0] only


@pytest.mark.sweep
def test_ray_contamination_reads_the_same_rows(spark):
    """From the round-5 review (readers)."""
    ray = pytest.importorskip("ray")
    from auditor.distributed.contamination import ray_contamination
    folder, committed, planted = spark
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = ray_contamination(str(folder), "gsm8k", quiet=True)
    finally:
        ray.shutdown()
    found = {it["benchmark_row"]: it for it in on_ray.items}
    assert on_ray.corpus_records == len(committed)
    assert 150 in found[0]["corpus_rows"] and not set(planted) & set(found)
    assert on_ray.engine["shards"] == 2
    assert any("_temporary/" in n for n in on_ray.corpus["notices"])
    assert on_ray.items == contamination(str(folder), "gsm8k").items


def test_an_unfinished_write_and_folders_the_user_names(tmp_path):
    """From the round-5 review (readers): No _SUCCESS beside a _temporary/ holding files: the notice says the
    write may be unfinished.
    A "_" folder named by the user (or spelled in a glob) is read; found by a wildcard it is not."""
    job = tmp_path / "job"
    _write(job / "part-00000.parquet", TRAIN[:40])
    _write(job / "_temporary/0/task_1/part-00001.parquet", TRAIN[40:60])
    notices: list = []
    assert [p.name for p in sources.expand_local(str(job), notices)] == ["part-00000.parquet"]
    assert "no _SUCCESS file" in notices[0]
    listed: list = []
    _, shards = list_shards(str(job), notices=listed)
    assert [s.name for s in shards] == ["part-00000.parquet"] and "no _SUCCESS file" in listed[0]

    lab = tmp_path / "lab"
    _write(lab / "_data" / "a.parquet", TRAIN[:30])
    (lab / "_data" / "_part.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN[30:35]))
    _write(lab / "_data" / "_delta_log" / "x.parquet", TRAIN[35:40])       # a "_" folder below it
    expected = pd.read_parquet(lab / "_data" / "a.parquet").to_dict("records")
    jsonl = pd.read_json(lab / "_data" / "_part.jsonl", lines=True, dtype=False).to_dict("records")
    table = sources.load(str(lab / "_data"))                # named: read (its "_" file too, as before)
    assert table.rows == jsonl + expected and table.files == ("_part.jsonl", "a.parquet")
    assert any("_delta_log/x.parquet" in n for n in table.notices)
    _, shards = list_shards(str(lab / "_data"), RECORD_FORMATS)
    assert [s.name for s in shards] == ["_part.jsonl", "a.parquet"]
    # spelled in a glob: read; matched by a wildcard only: skipped, and the error says what was skipped
    assert sources.load(str(lab / "_data" / "*.parquet")).rows == expected
    assert [s.name for s in list_shards(str(lab / "_data" / "*.parquet"))[1]] == ["a.parquet"]
    for source in (str(lab), str(lab / "*" / "*.parquet")):
        with pytest.raises(AuditorError) as local:
            sources.load(source)
        with pytest.raises(AuditorError) as ray_listing:
            list_shards(source)
        for exc in (local.value, ray_listing.value):
            assert exc.code == "not_found" and "'_data/" in exc.message, exc.message
            assert f"{3 if source == str(lab) else 1} data file(s) in folders whose names start with '_'" \
                in exc.message, exc.message


def test_an_s3_folder_written_by_spark_lists_its_part_files(spark, monkeypatch):
    """From the round-5 review (readers): The same folder on S3 (a local moto server): the Ray listing skips
    _temporary/ there too,
    and the parts read back equal the local ones."""
    moto_server = pytest.importorskip("moto.server")
    pafs = pytest.importorskip("pyarrow.fs")
    folder, committed, _ = spark
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        for key, value in {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
                           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                           "AWS_EC2_METADATA_DISABLED": "true"}.items():
            monkeypatch.setenv(key, value)
        s3 = pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", access_key="testing",
                               secret_key="testing", region="us-east-1", allow_bucket_creation=True)
        s3.create_dir("spark-out")
        for path in folder.rglob("*"):
            if path.is_file():
                with s3.open_output_stream(f"spark-out/out.parquet/{path.relative_to(folder).as_posix()}",
                                           compression=None) as out:
                    out.write(path.read_bytes())
        for uri in ("s3://spark-out/out.parquet", "s3://spark-out/out.parquet/**/*.parquet"):
            notices: list = []
            filesystem, shards = list_shards(uri, RECORD_FORMATS, notices)
            assert [s.path for s in shards] == [f"spark-out/out.parquet/{p}" for p in PARTS], uri
            assert len(notices) == 1 and "_temporary/" in notices[0] and "attempt_" in notices[0]
            assert "no _SUCCESS" not in notices[0]
            rows = [r for s in shards for batch in record_batches(open_shard(filesystem, s), s) for r in batch]
            assert rows == committed
    finally:
        server.stop()
