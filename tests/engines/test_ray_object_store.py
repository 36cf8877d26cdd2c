"""``--engine ray`` on object stores, served on 127.0.0.1 (no internet): s3:// from a local S3
server (moto's), hf:// from the fake Hugging Face Hub (tests/hub_server.py), read through pyarrow's
S3 filesystem and huggingface_hub's HfFileSystem (fsspec). The same shards (real GSM8K and
HumanEval text, four GSM8K test questions planted at known rows; JSONL, JSONL.gz and Parquet) lie
in a local folder, and each remote run equals the local engine on that folder: the same items,
rows, records and tokens (summary.json apart from the engine block and the source's name).

The endpoint reaches the driver (pyarrow, s3fs-free listing, HfFileSystem) and the Ray workers
through the environment (AWS_ENDPOINT_URL, AWS_*; HF_ENDPOINT), set before the module's local Ray
starts, so its workers inherit it as the CLI's own local Ray would; an S3 URI can also carry it as
pyarrow query options (``?endpoint_override=HOST:PORT&scheme=http``), which reports never show.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import urllib.request

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pafs = pytest.importorskip("pyarrow.fs")

from hub_server import FakeHub  # noqa: E402
import real_data as real_data_files  # noqa: E402
from object_store_helpers import (BUCKET, PLANTED, SHARDS, assert_equal_to_local,  # noqa: E402
                                  assert_folder_equals_local, assert_leak_equals_local, assert_listing_is_local,
                                  assert_middle_shards_equal_local, assert_parquet_shard_equals_local, comparable,
                                  corpus, planted_rows)  # noqa: F401   (corpus: a module fixture)
from moto.server import ThreadedMotoServer  # noqa: E402   (pinned in requirements-dev.txt: a test peer)

from auditor.contamination import contamination  # noqa: E402
from auditor.distributed import contamination as ray_engine  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402

REPO_ID = "acme/corpus"


@pytest.fixture(scope="module")
def stores(corpus, tmp_path_factory):
    """The local S3 server and fake Hub holding the corpus folder, and the environment that points
    at them, set before the module's Ray starts (its workers inherit it)."""
    folder, _ = corpus
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s3.start()
    host, port = s3.get_host_and_port()
    hub = FakeHub(tmp_path_factory.mktemp("hub"))
    hub.add_repo(REPO_ID, {f"data/{p.name}": p.read_bytes() for p in folder.iterdir()})
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
           "HF_ENDPOINT": hub.start(), "HF_HUB_DISABLE_TELEMETRY": "1", "HF_UPDATE_DOWNLOAD_COUNTS": "0",
           "HF_HOME": str(tmp_path_factory.mktemp("hf_home")), "HF_TOKEN": ""}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        import huggingface_hub.constants
        # huggingface_hub reads HF_ENDPOINT once, on import: the driver may have imported it already
        # (earlier tests do), so its endpoint and the download URL made from it are set here too.
        patch.setattr(huggingface_hub.constants, "ENDPOINT", env["HF_ENDPOINT"])
        patch.setattr(huggingface_hub.constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                      env["HF_ENDPOINT"] + "/{repo_id}/resolve/{revision}/{filename}")
        from huggingface_hub import HfFileSystem
        HfFileSystem.clear_instance_cache()
        bucket = Bucket(pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", access_key="testing",
                                          secret_key="testing", region="us-east-1", allow_bucket_creation=True))
        for path in folder.iterdir():
            bucket.put(f"corpus/{path.name}", path.read_bytes())
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield {"bucket": bucket, "endpoint": f"{host}:{port}", "hub": hub}
        finally:
            ray.shutdown()
            HfFileSystem.clear_instance_cache()
            hub.stop()
            s3.stop()


class Bucket:
    """BUCKET on the local S3 server, written with pyarrow's own S3 client."""

    def __init__(self, s3):
        self.s3 = s3
        s3.create_dir(BUCKET)

    def put(self, key: str, data: bytes) -> None:
        with self.s3.open_output_stream(f"{BUCKET}/{key}", compression=None) as out:     # the bytes as they are
            out.write(data)


@pytest.mark.slow
def test_listing_an_s3_folder_gives_the_local_shards(stores, corpus):
    assert_listing_is_local("s3", corpus[0], sorted(SHARDS))


@pytest.mark.slow
def test_an_s3_folder_equals_local_and_finds_the_planted_items(stores, corpus):
    folder, texts = corpus
    assert_folder_equals_local(f"s3://{BUCKET}/corpus/", folder, texts)


def test_an_s3_glob_equals_the_local_glob(stores, corpus, monkeypatch):
    folder, _ = corpus
    monkeypatch.setitem(sys.modules, "s3fs", None)      # the glob is matched without fsspec's S3 (not a dependency)
    assert_middle_shards_equal_local(f"s3://{BUCKET}/corpus/*.jsonl.gz", folder / "*.jsonl.gz")


def test_one_s3_shard_equals_local(stores, corpus):
    folder, _ = corpus
    assert_parquet_shard_equals_local("s3", folder)


def test_the_endpoint_and_credentials_in_the_uri_are_used_and_never_shown(stores, corpus, monkeypatch):
    """pyarrow's S3 URI options (endpoint, credentials) with a glob before them: the driver finds
    the server by the URI alone, and the report shows the URI without either."""
    folder, _ = corpus
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.setitem(sys.modules, "s3fs", None)
    uri = f"s3://testing:secret-in-uri@{BUCKET}/corpus/part-[23]*?endpoint_override={stores['endpoint']}&scheme=http"
    result = ray_contamination(uri, "gsm8k", quiet=True)
    found = {it["benchmark_row"]: it["corpus_rows"] for it in result.items}
    assert 1650 - 1500 in found[17] and 2100 - 1500 in found[42] and 5 not in found
    assert_equal_to_local(result, folder / "part-[23]*", f"s3://{BUCKET}/corpus/part-[23]*", 2)
    shown = json.dumps(result.summary())
    assert "secret-in-uri" not in shown and "endpoint_override" not in shown


def test_leak_reads_a_from_s3_as_locally(stores, corpus, real_data):
    folder, _ = corpus
    on_ray, local = assert_leak_equals_local(f"s3://{BUCKET}/corpus/", folder, str(real_data / "gsm8k/test.jsonl"))
    assert on_ray.a.fingerprint == local.a.fingerprint


def test_an_interrupted_s3_run_resumes_by_shard_name_and_size(stores, corpus, tmp_path, monkeypatch):
    folder, texts = corpus
    source = f"s3://{BUCKET}/corpus/"
    shard_dir = tmp_path / "shards"
    monkeypatch.setenv(ray_engine.STOP_AFTER_ENV, "2")
    with pytest.raises(KeyboardInterrupt):
        ray_contamination(source, "gsm8k", quiet=True, shard_dir=shard_dir)
    monkeypatch.delenv(ray_engine.STOP_AFTER_ENV)
    resumed = ray_contamination(source, "gsm8k", quiet=True, shard_dir=shard_dir)
    assert resumed.summary()["engine"]["shards_resumed"] == 2
    assert_equal_to_local(resumed, folder, source, 4)
    # An object replaced since (another size) is scanned again: the result follows its new content.
    changed = tmp_path / "corpus"
    shutil.copytree(folder, changed)
    lines = (changed / "part-0.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[10] = json.dumps({"id": 10, "text": texts[PLANTED[5]] + " Again."}) + "\n"
    (changed / "part-0.jsonl").write_text("".join(lines), encoding="utf-8")
    stores["bucket"].put("corpus/part-0.jsonl", (changed / "part-0.jsonl").read_bytes())
    try:
        again = ray_contamination(source, "gsm8k", quiet=True, shard_dir=shard_dir)
        assert again.summary()["engine"]["shards_resumed"] == 3
        assert 10 in next(it for it in again.items if it["benchmark_row"] == 5)["corpus_rows"]
        assert_equal_to_local(again, changed, source, 4)
    finally:
        stores["bucket"].put("corpus/part-0.jsonl", (folder / "part-0.jsonl").read_bytes())


def test_s3_errors_name_the_uri(stores, corpus, tmp_path, monkeypatch):
    folder, _ = corpus
    for uri in ("s3://no-such-bucket/corpus/", f"s3://{BUCKET}/no-such-prefix/", f"s3://{BUCKET}/corpus/x.jsonl",
                "s3://no-such-bucket/corpus/*.jsonl", f"s3://{BUCKET}/corpus/*.csv"):
        with pytest.raises(AuditorError) as caught:
            ray_contamination(uri, "gsm8k", quiet=True)
        assert caught.value.code == "not_found" and uri in caught.value.message, (uri, caught.value.message)
    # A truncated object is named by the shard.
    data = (folder / "part-1.jsonl.gz").read_bytes()
    stores["bucket"].put("bad/part-1.jsonl.gz", data[: len(data) // 2])
    stores["bucket"].put("bad/part-0.jsonl", (folder / "part-0.jsonl").read_bytes())
    with pytest.raises(AuditorError) as caught:
        ray_contamination(f"s3://{BUCKET}/bad/", "gsm8k", quiet=True)
    assert caught.value.code == "bad_format" and "part-1.jsonl.gz" in caught.value.message
    # Credentials the server refuses (it checks them from now on: moto's reset-auth, 0 free requests).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
    previous = reset_auth(b"0")["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]
    try:
        with pytest.raises(AuditorError) as caught:
            ray_contamination(f"s3://{BUCKET}/corpus/", "gsm8k", quiet=True)
    finally:
        reset_auth(previous.encode())
    assert f"s3://{BUCKET}/corpus/" in caught.value.message and "ACCESS_DENIED" in caught.value.message.upper()


def reset_auth(free_requests: bytes) -> dict:
    """moto's switch for checking credentials: requests served before it checks them (inf: never)."""
    request = urllib.request.Request(f"{os.environ['AWS_ENDPOINT_URL']}/moto-api/reset-auth", data=free_requests,
                                     headers={"Content-Type": "application/octet-stream"})     # not a form
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_the_cli_reads_s3_and_refuses_a_missing_bucket(stores, corpus, run_cli, tmp_path):
    folder, _ = corpus
    address = ray.get_runtime_context().gcs_address
    code, out, err = run_cli("contamination", f"s3://{BUCKET}/corpus/", "--benchmark", "gsm8k", "--engine", "ray",
                             "--ray-address", address, "--json", "-", "--quiet", timeout=300)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["corpus"]["source"] == f"s3://{BUCKET}/corpus/"
    assert comparable(summary) == comparable(contamination(str(folder), "gsm8k").summary())
    code, out, err = run_cli("contamination", "s3://no-such-bucket/corpus/", "--benchmark", "gsm8k",
                             "--engine", "ray", "--ray-address", address, "--quiet", timeout=300)
    assert code == 2 and "s3://no-such-bucket/corpus/" in err and "Traceback" not in err


def test_a_hub_dataset_folder_and_glob_equal_local(stores, corpus, monkeypatch):
    folder, _ = corpus
    source = f"hf://datasets/{REPO_ID}/data"
    result = ray_contamination(source, "gsm8k", quiet=True)
    assert planted_rows(result) == PLANTED
    assert_equal_to_local(result, folder, source, 4)
    pattern = f"hf://datasets/{REPO_ID}/data/*.jsonl.gz"
    assert_equal_to_local(ray_contamination(pattern, "gsm8k", quiet=True), folder / "*.jsonl.gz", pattern, 2)
    requested = {path for _, path in stores["hub"].requests}
    assert any(p.startswith(f"/datasets/{REPO_ID}/resolve/") for p in requested)     # the shards came from the hub
    with pytest.raises(AuditorError) as caught:
        ray_contamination("hf://datasets/acme/no-such-repo/data", "gsm8k", quiet=True)
    assert caught.value.code == "not_found" and "hf://datasets/acme/no-such-repo/data" in caught.value.message
    # A hub that does not answer: the listing's client error (not an OSError) is named, not a traceback.
    import huggingface_hub.constants
    from huggingface_hub import HfFileSystem
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    HfFileSystem.clear_instance_cache()
    try:
        for source in (f"hf://datasets/{REPO_ID}/data", f"hf://datasets/{REPO_ID}/data/*.jsonl.gz"):
            with pytest.raises(AuditorError) as caught:
                ray_contamination(source, "gsm8k", quiet=True)
            assert caught.value.code == "not_found" and f"Cannot list {source!r}" in caught.value.message
    finally:
        HfFileSystem.clear_instance_cache()


# --------------------------------------------------------------------------- --decontaminate to S3

def s3_text(bucket: Bucket, key: str) -> str:
    with bucket.s3.open_input_stream(f"{BUCKET}/{key}", compression=None) as f:
        return f.read().decode("utf-8")


def s3_keys(bucket: Bucket, prefix: str) -> list:
    infos = bucket.s3.get_file_info(pafs.FileSelector(f"{BUCKET}/{prefix}", recursive=True, allow_not_found=True))
    return sorted(i.path[len(BUCKET) + 1:] for i in infos if i.type == pafs.FileType.File)


@pytest.mark.slow
def test_decontaminated_copies_written_to_s3_are_the_local_engines_copy(stores, corpus, tmp_path, run_cli):
    """OUT on the object store: one copy per shard, together the local engine's copy of the local
    folder row for row, the manifest beside OUT with the local dropped rows, no temporary key left;
    run again over its own copies, the same."""
    from auditor.decontaminate import decontaminate
    from auditor.distributed.decontaminate import ray_decontaminate
    folder, _ = corpus
    bucket = stores["bucket"]
    local = decontaminate(str(folder), "gsm8k", tmp_path / "local.jsonl")
    # the rows dropped are the n-gram reference's, the planted ones among them
    from definitions import contamination_reference
    texts = corpus[1]
    questions = [r["question"] for r in real_data_files.rows("gsm8k/test.jsonl")]
    found = contamination_reference(texts, questions, local.contamination.n)
    assert local.dropped_rows.tolist() == sorted(set().union(*(set(rows) for rows, _, _ in found.values())))
    assert set(PLANTED.values()) <= set(local.dropped_rows.tolist())
    expected = [json.loads(line) for line in (tmp_path / "local.jsonl").read_text(encoding="utf-8").splitlines()]
    copies = [f"clean/part-{k}.jsonl" for k in range(4)]
    for _ in range(2):
        made = ray_decontaminate(f"s3://{BUCKET}/corpus/", "gsm8k", f"s3://{BUCKET}/clean/", quiet=True)
        assert s3_keys(bucket, "clean") == copies
        assert [json.loads(line) for key in copies for line in s3_text(bucket, key).splitlines()] == expected
        manifest = json.loads(s3_text(bucket, "clean.dropped.json"))
        assert manifest["dropped_rows"] == local.dropped_rows.tolist() == made.dropped_rows.tolist()
        assert (made.out, made.manifest) == (f"s3://{BUCKET}/clean", f"s3://{BUCKET}/clean.dropped.json")
    # A JSONL shard's copy is its own lines, byte for byte, less the dropped ones.
    dropped = set(local.dropped_rows.tolist())
    source = (folder / "part-0.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert s3_text(bucket, "clean/part-0.jsonl") == "".join(l for i, l in enumerate(source) if i not in dropped)
    # From the store to a local folder: the copies are named below the corpus's folder, not by key.
    ray_decontaminate(f"s3://{BUCKET}/corpus/", "gsm8k", tmp_path / "here", quiet=True)
    assert sorted(p.name for p in (tmp_path / "here").iterdir()) == [c.split("/")[1] for c in copies]
    assert [(tmp_path / "here" / c.split("/")[1]).read_text(encoding="utf-8") for c in copies] == \
        [s3_text(bucket, c) for c in copies]
    # The CLI: the same copies, the summary names OUT without the store's options.
    address = ray.get_runtime_context().gcs_address
    code, out, err = run_cli("contamination", f"s3://{BUCKET}/corpus/", "--benchmark", "gsm8k", "--engine", "ray",
                             "--ray-address", address, "--decontaminate", f"s3://{BUCKET}/cli-clean", "--json", "-",
                             "--quiet", timeout=300)
    assert code == 0, err
    assert json.loads(out)["decontaminated"] == {"out": "cli-clean", "manifest": "cli-clean.dropped.json",
                                                 "records": local.records, "kept": local.kept,
                                                 "dropped": len(dropped)}
    assert [s3_text(bucket, f"cli-{key}") for key in copies] == [s3_text(bucket, key) for key in copies]


def test_s3_decontaminate_refusals(stores, corpus, tmp_path, run_cli):
    """No copy over or inside the corpus's folder, none into a folder holding other data, and the
    local engine (which writes one local file) does not take a URI; nothing is written."""
    from auditor.distributed.decontaminate import ray_decontaminate
    bucket = stores["bucket"]
    before = s3_keys(bucket, "")
    for out, said in ((f"s3://{BUCKET}/corpus", "share a folder"), (f"s3://{BUCKET}/corpus/clean/", "share a folder"),
                      (f"s3://{BUCKET}/", "is a whole bucket")):
        with pytest.raises(AuditorError, match=said):
            ray_decontaminate(f"s3://{BUCKET}/corpus/", "gsm8k", out, quiet=True)
    bucket.put("stale/old-run.jsonl", b'{"text": "a record of another run"}\n')
    with pytest.raises(AuditorError, match="already holds 'old-run.jsonl'"):
        ray_decontaminate(f"s3://{BUCKET}/corpus/", "gsm8k", f"s3://{BUCKET}/stale", quiet=True)
    assert s3_keys(bucket, "") == sorted(before + ["stale/old-run.jsonl"])
    code, _, err = run_cli("contamination", str(corpus[0]), "--benchmark", "gsm8k",
                           "--decontaminate", f"s3://{BUCKET}/local-engine.jsonl", "--quiet", timeout=120)
    assert code == 2 and "--engine ray" in err and "Traceback" not in err, err


def test_a_failed_s3_copy_leaves_neither_the_copy_nor_its_temporary_key(stores):
    from auditor.distributed.decontaminate import OutFolder
    bucket = stores["bucket"]
    folder = OutFolder(f"s3://{BUCKET}/half")
    with pytest.raises(RuntimeError, match="stopped"):
        with folder.open_copy("part-0.jsonl") as fh:
            fh.write("x" * (3 << 20))        # past one piece: bytes reached the store
            raise RuntimeError("stopped")
    assert s3_keys(bucket, "half") == []
    with folder.open_copy("part-0.jsonl") as fh:
        fh.write('{"text": "whole"}\n')
    assert s3_keys(bucket, "half") == ["half/part-0.jsonl"]
    assert s3_text(bucket, "half/part-0.jsonl") == '{"text": "whole"}\n'
