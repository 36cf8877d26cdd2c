"""End-to-end checks of tests/hub_server.py against the REAL `datasets` / `huggingface_hub` clients.

HF_ENDPOINT is read when datasets / huggingface_hub are imported, so every client call runs in a fresh
`python -c` subprocess (see `run_client`) with its own HF_HOME / HF_DATASETS_CACHE; the FakeHub itself
runs in this pytest process. Data: real GSM8K rows from the bundled examples (tests/real_data.py).
"""

from __future__ import annotations

import io
import json
import time
import os
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hub_server import FakeHub  # noqa: E402
import real_data  # noqa: E402

N = 50
TOKEN = "hf_fake_gated_token"

README = """---
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train-00000-of-00001.parquet
  - split: test
    path: main/test-00000-of-00001.parquet
- config_name: socratic
  data_files:
  - split: train
    path: socratic/train-00000-of-00001.parquet
  - split: test
    path: socratic/test-00000-of-00001.parquet
---
# GSM8K (fake Hub copy for tests)
"""

def _rows(name: str, start: int = 0, stop: int = N) -> list[dict]:
    return real_data.rows(f"gsm8k/{name}")[start:stop]


def _parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


# There is no socratic *train* file in the bundled data: socratic/train uses test_socratic rows 50..79.
EXPECTED = {
    ("main", "train"): _rows("train.jsonl"),
    ("main", "test"): _rows("test.jsonl"),
    ("socratic", "train"): _rows("test_socratic.jsonl", N, N + 30),
    ("socratic", "test"): _rows("test_socratic.jsonl"),
}


@pytest.fixture(scope="module")
def fake_hub(tmp_path_factory):
    hub = FakeHub(tmp_path_factory.mktemp("hub"))
    hub.add_repo(
        "openai/gsm8k",
        {f"{c}/{s}-00000-of-00001.parquet": _parquet(rows) for (c, s), rows in EXPECTED.items()},
        readme=README,
    )
    hub.add_repo("acme/gsm8k-jsonl", {  # no README: datasets infers config "default" + splits from names
        "data/train.jsonl": _jsonl(EXPECTED["main", "train"]),
        "data/test.jsonl": _jsonl(EXPECTED["main", "test"]),
    })
    hub.add_repo("acme/gated", {"data/test.jsonl": _jsonl(EXPECTED["main", "test"])}, gated_token=TOKEN)
    hub.start()
    yield hub
    hub.stop()


@pytest.fixture
def hub(fake_hub):
    fake_hub.requests.clear()
    return fake_hub


CLIENT_PRELUDE = """
import json, time
def catch(fn):
    t = time.monotonic()
    try:
        fn()
    except Exception as e:
        resp = getattr(e, "response", None)
        return {"type": type(e).__module__ + "." + type(e).__qualname__, "msg": str(e),
                "mro": [c.__module__ + "." + c.__qualname__ for c in type(e).__mro__],
                "status": getattr(resp, "status_code", None), "seconds": time.monotonic() - t}
    return None
def out(obj):
    print("@@RESULT@@" + json.dumps(obj, default=str))
"""


def run_client(endpoint: str, tmp_path: Path, code: str, timeout: float = 180) -> dict:
    """Run `code` in a fresh interpreter pointed at `endpoint`; return what it passed to out()."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    env.update(
        HF_ENDPOINT=endpoint, HF_UPDATE_DOWNLOAD_COUNTS="0", HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(tmp_path / "hf_home"), HF_DATASETS_CACHE=str(tmp_path / "hf_datasets"),
        NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
    )
    proc = subprocess.run([sys.executable, "-c", CLIENT_PRELUDE + textwrap.dedent(code)],
                          env=env, capture_output=True, text=True, timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("@@RESULT@@")]
    assert proc.returncode == 0 and lines, f"client failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1][len("@@RESULT@@"):])


def _qa(rows):
    return [{"question": r["question"], "answer": r["answer"]} for r in rows]


# -- raw HTTP (no subprocess needed) -------------------------------------------------------------------


def _http(hub, method, path, headers=None):
    req = urllib.request.Request(hub.endpoint + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_raw_http_contract(hub):
    data = (hub.root / "acme/gsm8k-jsonl/data/test.jsonl").read_bytes()
    status, headers, body = _http(hub, "HEAD", "/datasets/acme/gsm8k-jsonl/resolve/main/data/test.jsonl")
    assert (status, body, int(headers["Content-Length"])) == (200, b"", len(data))
    assert headers["X-Repo-Commit"] == hub.repos["acme/gsm8k-jsonl"]["sha"] and headers["ETag"]
    status, headers, body = _http(hub, "GET", "/datasets/acme/gsm8k-jsonl/resolve/main/data/test.jsonl",
                                  {"Range": "bytes=10-19"})
    assert (status, body, headers["Content-Range"]) == (206, data[10:20], f"bytes 10-19/{len(data)}")
    assert _http(hub, "GET", "/datasets/acme/gsm8k-jsonl/resolve/main/data/test.jsonl",
                 {"Range": "bytes=-5"})[::2] == (206, data[-5:])
    for path, code in [("/datasets/acme/gsm8k-jsonl/resolve/main/README.md", "EntryNotFound"),
                       ("/api/datasets/nobody/nothing", "RepoNotFound"),
                       ("/datasets/acme/gsm8k-jsonl/resolve/v9/data/test.jsonl", "RevisionNotFound")]:
        status, headers, body = _http(hub, "HEAD", path)
        assert (status, headers["X-Error-Code"], body) == (404, code, b"")
    gated = "/datasets/acme/gated/resolve/main/data/test.jsonl"
    assert _http(hub, "GET", gated)[0] == 401
    assert _http(hub, "GET", gated, {"Authorization": "Bearer wrong"})[1]["X-Error-Code"] == "GatedRepo"
    assert _http(hub, "GET", gated, {"Authorization": "Bearer wrong"})[0] == 403
    assert _http(hub, "GET", gated, {"Authorization": f"Bearer {TOKEN}"})[2] == data
    assert ("HEAD", "/api/datasets/nobody/nothing") in hub.requests


# -- real datasets client ------------------------------------------------------------------------------


def test_config_and_split_discovery(hub, tmp_path):
    res = run_client(hub.endpoint, tmp_path, """
        import datasets
        out({"configs": datasets.get_dataset_config_names("openai/gsm8k"),
             "splits": {c: datasets.get_dataset_split_names("openai/gsm8k", c) for c in ("main", "socratic")},
             "jsonl_configs": datasets.get_dataset_config_names("acme/gsm8k-jsonl"),
             "jsonl_splits": datasets.get_dataset_split_names("acme/gsm8k-jsonl")})
    """)
    assert res == {"configs": ["main", "socratic"],
                   "splits": {"main": ["train", "test"], "socratic": ["train", "test"]},
                   "jsonl_configs": ["default"], "jsonl_splits": ["train", "test"]}
    assert ("HEAD", "/datasets/openai/gsm8k/resolve/main/README.md") in hub.requests


def test_load_dataset_config_and_split(hub, tmp_path):
    res = run_client(hub.endpoint, tmp_path, """
        import datasets
        ds = datasets.load_dataset("openai/gsm8k", "socratic", split="test")
        jl = datasets.load_dataset("acme/gsm8k-jsonl", split="train")
        out({"socratic_test": ds.to_list(), "jsonl_train": jl.to_list()})
    """)
    assert res["socratic_test"] == _qa(EXPECTED["socratic", "test"])
    assert res["jsonl_train"] == _qa(EXPECTED["main", "train"])
    sha = hub.repos["openai/gsm8k"]["sha"]
    assert ("GET", f"/datasets/openai/gsm8k/resolve/{sha}/socratic/test-00000-of-00001.parquet") in hub.requests


def test_streaming(hub, tmp_path):
    res = run_client(hub.endpoint, tmp_path, """
        import itertools, datasets
        ds = datasets.load_dataset("openai/gsm8k", "main", split="test", streaming=True)
        jl = datasets.load_dataset("acme/gsm8k-jsonl", split="test", streaming=True)
        out({"first3": list(itertools.islice(ds, 3)), "n_jsonl": sum(1 for _ in jl)})
    """)
    assert res == {"first3": _qa(EXPECTED["main", "test"][:3]), "n_jsonl": N}


def test_unknown_repo_config_split(hub, tmp_path):
    res = run_client(hub.endpoint, tmp_path, """
        import datasets
        out({"repo": catch(lambda: datasets.load_dataset("nobody/nothing", split="test")),
             "repo_configs": catch(lambda: datasets.get_dataset_config_names("nobody/nothing")),
             "config": catch(lambda: datasets.load_dataset("openai/gsm8k", "nope", split="test")),
             "split": catch(lambda: datasets.load_dataset("openai/gsm8k", "main", split="validation")),
             "split_stream": catch(lambda: datasets.load_dataset("openai/gsm8k", "main", split="validation",
                                                                 streaming=True))})
    """)
    for key in ("repo", "repo_configs"):
        assert res[key]["type"] == "datasets.exceptions.DatasetNotFoundError"
        assert "builtins.FileNotFoundError" in res[key]["mro"]
        assert res[key]["msg"] == "Dataset 'nobody/nothing' doesn't exist on the Hub or cannot be accessed."
    assert res["config"]["type"] == "builtins.ValueError"
    assert res["config"]["msg"] == "BuilderConfig 'nope' not found. Available: ['main', 'socratic']"
    assert res["split"]["type"] == "builtins.ValueError"
    assert res["split"]["msg"] == "Unknown split \"validation\". Should be one of ['train', 'test']."
    assert res["split_stream"]["type"] == "builtins.ValueError"
    assert res["split_stream"]["msg"] == "Bad split: validation. Available splits: ['train', 'test']"


def test_gated_repo(hub, tmp_path):
    res = run_client(hub.endpoint, tmp_path, f"""
        import datasets, huggingface_hub
        api = huggingface_hub.HfApi()
        out({{"no_token": catch(lambda: datasets.load_dataset("acme/gated", split="test")),
              "wrong_token": catch(lambda: datasets.load_dataset("acme/gated", split="test", token="hf_wrong")),
              "hub_no_token": catch(lambda: api.hf_hub_download("acme/gated", "data/test.jsonl",
                                                                repo_type="dataset")),
              "auth_check": catch(lambda: api.auth_check("acme/gated", repo_type="dataset")),
              "auth_check_ok": catch(lambda: api.auth_check("acme/gated", repo_type="dataset", token="{TOKEN}")),
              "info_gated": api.dataset_info("acme/gated", timeout=5).gated,
              "rows": datasets.load_dataset("acme/gated", split="test", token="{TOKEN}").to_list()}})
    """)
    assert res["no_token"]["type"] == "datasets.exceptions.DatasetNotFoundError"
    assert res["no_token"]["msg"] == ("Dataset 'acme/gated' is a gated dataset on the Hub. "
                                      "You must be authenticated to access it.")
    assert res["wrong_token"]["type"] == "datasets.exceptions.DatasetNotFoundError"
    assert "gated dataset" in res["wrong_token"]["msg"] and "ask for access" in res["wrong_token"]["msg"]
    for key in ("hub_no_token", "auth_check"):
        assert res[key]["type"] == "huggingface_hub.errors.GatedRepoError" and res[key]["status"] == 401
        assert "huggingface_hub.errors.RepositoryNotFoundError" in res[key]["mro"]
    assert res["auth_check_ok"] is None
    assert res["info_gated"] == "auto"  # repo info is public even for gated repos (as on the real Hub)
    assert res["rows"] == _qa(EXPECTED["main", "test"])


def test_hfapi_dataset_info(hub, tmp_path):
    res = run_client(hub.endpoint, tmp_path, """
        import huggingface_hub
        api = huggingface_hub.HfApi()
        info = api.dataset_info("openai/gsm8k", timeout=5)
        out({"sha": info.sha, "files": sorted(s.rfilename for s in info.siblings),
             "missing": catch(lambda: api.dataset_info("nobody/nothing", timeout=5))})
    """)
    assert res["sha"] == hub.repos["openai/gsm8k"]["sha"]
    assert "README.md" in res["files"] and "socratic/test-00000-of-00001.parquet" in res["files"]
    missing = res["missing"]
    assert missing["type"] == "huggingface_hub.errors.RepositoryNotFoundError" and missing["status"] == 404
    assert {"huggingface_hub.errors.HfHubHTTPError", "httpx2.HTTPError", "builtins.OSError"} <= set(missing["mro"])


def _dead_endpoint() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: connections are refused
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_unreachable_endpoint_dataset_info_fails_fast(tmp_path):
    res = run_client(_dead_endpoint(), tmp_path, """
        import huggingface_hub
        out(catch(lambda: huggingface_hub.HfApi().dataset_info("openai/gsm8k", timeout=5)))
    """)
    assert res["type"] == "httpx2.ConnectError" and "Connection refused" in res["msg"]
    assert "builtins.OSError" not in res["mro"] and "httpx2.TransportError" in res["mro"]
    assert res["seconds"] < 3


CLASSIFY = """
    import datasets, huggingface_hub
    from auditor.io.hub import _classify
    def code(fn, repo="x/y", config=None):
        try:
            fn()
        except Exception as exc:
            return [type(exc).__name__, _classify(exc, repo, config).code]
        return None
"""


def test_hub_errors_are_classified_by_the_clients_exception_classes(hub, tmp_path):
    # Real exceptions raised by huggingface_hub and datasets against the local hub, then classified.
    res = run_client(hub.endpoint, tmp_path, textwrap.dedent(CLASSIFY) + textwrap.dedent("""
        api = huggingface_hub.HfApi()
        class GatedRepoError(Exception):     # a look-alike name, not the hub's class: not "gated"
            pass
        def lookalike():
            raise GatedRepoError("nothing to do with the hub")
        out({"missing": code(lambda: api.dataset_info("nobody/nothing", timeout=5)),
             "missing_ds": code(lambda: datasets.get_dataset_config_names("nobody/nothing")),
             "gated": code(lambda: api.auth_check("acme/gated", repo_type="dataset")),
             "gated_ds": code(lambda: datasets.load_dataset("acme/gated", split="test")),
             "config": code(lambda: datasets.load_dataset("openai/gsm8k", "nope", split="test"), "openai/gsm8k", "nope"),
             "lookalike": code(lookalike)})
    """))
    assert res == {"missing": ["RepositoryNotFoundError", "not_found"],
                   "missing_ds": ["DatasetNotFoundError", "not_found"],
                   "gated": ["GatedRepoError", "gated"], "gated_ds": ["DatasetNotFoundError", "gated"],
                   "config": ["ValueError", "bad_config"], "lookalike": ["GatedRepoError", "bad_format"]}
    dead = run_client(_dead_endpoint(), tmp_path, textwrap.dedent(CLASSIFY) + textwrap.dedent("""
        out(code(lambda: huggingface_hub.HfApi().dataset_info("openai/gsm8k", timeout=5)))
    """))
    assert dead == ["ConnectError", "hub_unreachable"]


# -- the auditor's own hub path (CLI in a fresh process, so HF_ENDPOINT applies) ----------------------


def run_auditor(endpoint: str, tmp_path: Path, *args, token: str | None = None, timeout: float = 120):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    env.update(HF_ENDPOINT=endpoint, HF_UPDATE_DOWNLOAD_COUNTS="0", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HOME=str(tmp_path / "hf_home"), HF_DATASETS_CACHE=str(tmp_path / "hf_datasets"),
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", AUDITOR_HUB_TIMEOUT="5")
    if token:
        env["HF_TOKEN"] = token
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "auditor", *args, "--json", "-", "--quiet"], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr, time.monotonic() - start


def test_auditor_scans_a_hub_dataset(hub, tmp_path):
    rc, summary, _, _ = run_auditor(hub.endpoint, tmp_path, "scan", "openai/gsm8k", "--config", "socratic",
                                    "--split", "test")
    assert rc == 0
    assert summary["input"]["source"] == "openai/gsm8k"
    assert (summary["input"]["config"], summary["input"]["split"]) == ("socratic", "test")
    assert summary["input"]["records"] == len(EXPECTED["socratic", "test"])
    assert summary["roles"]["text"] == "question"
    # The same rows audited from the local copy give the same near-duplicate curve.
    import auditor
    local = auditor.scan(auditor.Table(rows=EXPECTED["socratic", "test"], source="local"))
    assert [p["clusters"] for p in summary["curve"]] == [p.clusters for p in local.curve]
    assert any(m == "GET" and "/resolve/" in p for m, p in hub.requests)


def test_auditor_hub_defaults_are_announced(hub, tmp_path):
    rc, summary, _, _ = run_auditor(hub.endpoint, tmp_path, "scan", "openai/gsm8k")
    assert rc == 0
    assert (summary["input"]["config"], summary["input"]["split"]) == ("main", "train")
    assert any("config not given" in n for n in summary["input"]["notices"])
    assert any("split not given" in n for n in summary["input"]["notices"])


def test_a_hub_benchmark_is_checked_on_its_test_split(hub, tmp_path):
    """A benchmark given as a Hub id is an evaluation set: without --benchmark-split, its test split
    (announced), where a scan of the same id reads train."""
    corpus = tmp_path / "corpus.jsonl"
    train = EXPECTED["main", "train"]
    corpus.write_text("".join(json.dumps({"text": r["question"]}) + "\n" for r in train[:200]), encoding="utf-8")
    rc, summary, _, _ = run_auditor(hub.endpoint, tmp_path, "contamination", str(corpus), "--benchmark",
                                    "openai/gsm8k", "--benchmark-config", "main")
    assert rc == 0
    bench = summary["benchmark"]
    assert bench["split"] == "test" and bench["records"] == len(EXPECTED["main", "test"])
    assert bench["notices"] == ["split not given: using 'test' (available: train, test)"]
    assert summary["contaminated"]["records"] < 10      # train questions are not the test items


def test_auditor_hub_row_cap_is_stated(hub, tmp_path):
    rc, summary, _, _ = run_auditor(hub.endpoint, tmp_path, "scan", "acme/gsm8k-jsonl", "--split", "test",
                                    "--max-rows", "10")
    assert rc == 0
    assert summary["input"]["records"] == 10 and summary["input"]["truncated"] is True
    assert summary["input"]["row_cap"] == 10


@pytest.mark.parametrize("args, code, fragments", [
    (("scan", "nobody/nothing"), "not_found", ["nobody/nothing"]),
    (("scan", "openai/gsm8k", "--config", "nope"), "bad_config", ["nope", "main", "socratic"]),
    (("scan", "openai/gsm8k", "--config", "main", "--split", "validation"), "bad_split", ["validation", "train", "test"]),
    (("scan", "acme/gated", "--split", "test"), "gated", ["acme/gated", "token"]),
    (("scan", "openai/gsm8k", "--config", "main", "--text", "nope"), "missing_field", ["nope", "question"]),
])
@pytest.mark.slow
def test_auditor_hub_errors_are_specific(hub, tmp_path, args, code, fragments):
    rc, payload, stderr, seconds = run_auditor(hub.endpoint, tmp_path, *args)
    assert rc == 2
    err = payload["error"]
    assert err["code"] == code
    for fragment in fragments:
        assert fragment in err["message"] + err["hint"]
    assert "error:" in stderr and seconds < 60


def test_auditor_gated_with_token_works_and_never_prints_it(hub, tmp_path):
    rc, summary, stderr, _ = run_auditor(hub.endpoint, tmp_path, "scan", "acme/gated", "--split", "test",
                                         token=TOKEN)
    assert rc == 0 and summary["input"]["records"] == len(EXPECTED["main", "test"])
    assert TOKEN not in json.dumps(summary) and TOKEN not in stderr


def test_auditor_unreachable_hub_is_quick_and_clear(tmp_path):
    rc, payload, _, seconds = run_auditor(_dead_endpoint(), tmp_path, "scan", "openai/gsm8k")
    assert rc == 2 and payload["error"]["code"] == "hub_unreachable"
    assert seconds < 15


def test_auditor_leak_between_hub_splits(hub, tmp_path):
    rc, summary, _, _ = run_auditor(hub.endpoint, tmp_path, "leak", "openai/gsm8k", "openai/gsm8k",
                                    "--config-a", "main", "--split-a", "test", "--config-b", "socratic",
                                    "--split-b", "test")
    # socratic test has the same questions as main test, with different answers.
    assert rc == 0
    assert summary["identical_text"]["records"] == len(EXPECTED["socratic", "test"])
    assert summary["identical_both"]["records"] == 0


def test_auditor_decontaminates_a_hub_corpus(hub, tmp_path):
    """A Hub corpus (the datasets client, no local lines to copy) written without the records that
    share an n-gram with a benchmark holding three of its questions (and a question of its own)."""
    train = EXPECTED["main", "train"]
    bench = tmp_path / "bench.jsonl"
    planted = [train[4]["question"], train[17]["question"], "Prefix words. " + train[33]["question"],
               "A question of the benchmark's own that no training record holds at all, asked here."]
    bench.write_text("".join(json.dumps({"question": q}) + "\n" for q in planted), encoding="utf-8")
    out = tmp_path / "clean.jsonl"
    rc, summary, _, _ = run_auditor(hub.endpoint, tmp_path, "contamination", "acme/gsm8k-jsonl", "--split", "train",
                                    "--benchmark", str(bench), "--decontaminate", str(out))
    assert rc == 0
    made = summary["decontaminated"]
    assert (made["records"], made["kept"], made["dropped"]) == (len(train), len(train) - 3, 3)
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == [r for i, r in enumerate(train) if i not in (4, 17, 33)]
    assert json.loads(out.with_name("clean.jsonl.dropped.json").read_text())["dropped_rows"] == [4, 17, 33]
