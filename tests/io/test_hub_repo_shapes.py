"""Hub datasets laid out as real repositories are: the Hub converter's shards, configs and splits
named in the README's YAML (patterns, lists, a ``default: true`` config beside others), an
evaluation split only, compressed and Arrow files, pinned revisions by branch and short sha; and the
repositories that hold no readable data (a loading script, Git LFS pointers, nothing, a README, two
formats in one split), each refused with the reason. From the round-4 Hub review.

The local hub (tests/hub_server.py) serves every repository; one fresh interpreter reads them all
through the library (HF_ENDPOINT is read when the clients are imported), a few through the CLI.
Every expected row is the row served, written here."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import real_data  # noqa: E402
from conftest import run_cli  # noqa: E402
from hub_server import FakeHub  # noqa: E402

ROWS = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/train.jsonl")[:60]]
LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 123456\n"


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def parquet(rows) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def arrow(rows) -> bytes:          # an Arrow stream, as datasets' save_to_disk and the Hub's .arrow files
    sink = pa.BufferOutputStream()
    table = pa.Table.from_pylist(rows)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def csv_bytes(rows) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, ["question", "answer"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as writer:
        writer.write(data)
    return sink.getvalue().to_pybytes()


CONFIGS_README = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: "data/train-*"
  - split: validation
    path: ["val/a.parquet", "val/b.parquet"]
- config_name: extra
  data_files: "extra/*.parquet"
---
"""
DEFAULT_TRUE_README = """---
configs:
- config_name: beta
  data_files: "beta/*.jsonl"
- config_name: alpha
  data_files: "alpha/*.jsonl"
  default: true
---
"""

# name -> (files, readme)
REPOS = {
    "shards": ({f"data/train-0000{i}-of-00003.parquet": parquet(ROWS[i * 10:(i + 1) * 10]) for i in range(3)}
               | {"data/test-00000-of-00001.parquet": parquet(ROWS[30:35])}, None),
    "configs": ({"data/train-00000-of-00002.parquet": parquet(ROWS[:10]),
                 "data/train-00001-of-00002.parquet": parquet(ROWS[10:20]),
                 "val/a.parquet": parquet(ROWS[20:23]), "val/b.parquet": parquet(ROWS[23:27]),
                 "extra/x.parquet": parquet(ROWS[27:40])}, CONFIGS_README),
    "default-true": ({"alpha/train.jsonl": jsonl(ROWS[:8]), "beta/train.jsonl": jsonl(ROWS[8:20])},
                     DEFAULT_TRUE_README),
    "test-only": ({"data/test.jsonl": jsonl(ROWS[:9])}, None),
    "validation-dev": ({"data/validation.jsonl": jsonl(ROWS[:7]), "data/dev.jsonl": jsonl(ROWS[7:16])}, None),
    "arrow": ({"data/train.arrow": arrow(ROWS[:11])}, None),
    "csv-gz": ({"data/train.csv.gz": gzip.compress(csv_bytes(ROWS[:12]))}, None),
    "json-gz": ({"data/train.json.gz": gzip.compress(json.dumps(ROWS[:14]).encode())}, None),
    "jsonl-zst": ({"data/train.jsonl.zst": zstd(jsonl(ROWS[:13]))}, None),
    "mixed": ({"data/train-a.jsonl": jsonl(ROWS[:5]), "data/train-b.csv": csv_bytes(ROWS[5:12])}, None),
    "script": ({"script.py": b"import datasets\n\nclass Script(datasets.GeneratorBasedBuilder):\n    pass\n"}, None),
    "lfs-parquet": ({"data/train.parquet": LFS}, None),
    "lfs-csv": ({"data/train.csv": LFS}, None),
    "lfs-jsonl": ({"data/train.jsonl": LFS}, None),
    "empty": ({}, None),
    "readme-only": ({}, "# Nothing here yet\n"),
    "moving": ({"data/train.jsonl": jsonl(ROWS[:10])}, None),
}

# name -> (config, split, revision): what each read asks for ("@v1" and "@short" are filled in below)
READS = {
    "shards": (None, None, None), "shards/test": (None, "test", None),
    "configs": (None, None, None), "configs/validation": (None, "validation", None),
    "configs/extra": ("extra", None, None),
    "default-true": (None, None, None), "default-true/beta": ("beta", None, None),
    "test-only": (None, None, None), "validation-dev": (None, None, None),
    "arrow": (None, None, None), "csv-gz": (None, None, None), "json-gz": (None, None, None),
    "jsonl-zst": (None, None, None), "mixed": (None, None, None), "script": (None, None, None),
    "lfs-parquet": (None, None, None), "lfs-csv": (None, None, None), "lfs-jsonl": (None, None, None),
    "empty": (None, None, None), "readme-only": (None, None, None),
    "moving@v1": (None, None, "v1"), "moving@short": (None, None, "short"), "moving@nope": (None, None, "nope"),
    "moving/bad-config": ("nope", None, None), "moving/bad-split": (None, "nope", None),
    "default-true/bad-config": ("gamma", "zzz", None),
}

READER = """
import json, sys, auditor
from auditor.errors import AuditorError
from auditor.io.hub import describe
out = {}
for name, (repo, config, split, revision) in json.loads(sys.argv[1]).items():
    try:
        t = auditor.load(repo, config, split, kind="hub", revision=revision)
        out[name] = {"rows": list(t.rows), "config": t.config, "split": t.split, "notices": list(t.notices),
                     "revision": t.revision}
    except AuditorError as exc:
        out[name] = {"error": exc.code, "message": str(exc), "hint": exc.hint}
for name in ("default-true", "script", "lfs-csv"):          # the Space's dataset box
    try:
        info = describe("acme/" + name)
        out["describe:" + name] = {"config": info["config"], "rows": info["rows"]}
    except AuditorError as exc:
        out["describe:" + name] = {"error": exc.code, "message": str(exc)}
print("@@" + json.dumps(out, default=str))
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    server = FakeHub(tmp_path_factory.mktemp("hub"))
    for name, (files, readme) in REPOS.items():
        server.add_repo(f"acme/{name}", files, readme=readme)
    first = server.repos["acme/moving"]["sha"]
    server.add_ref("acme/moving", "v1", first)          # a branch naming the first commit
    server.add_repo("acme/moving", {"data/train.jsonl": jsonl(ROWS[:15])})
    endpoint = server.start()
    home = tmp_path_factory.mktemp("hf")
    env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(home), "HF_DATASETS_CACHE": str(home / "ds"),
           "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0",
           "AUDITOR_HUB_TIMEOUT": "60"}
    short = {"v1": "v1", "short": first[:7], "nope": "nope", None: None}
    reads = {name: (f"acme/{name.split('/')[0].split('@')[0]}", config, split, short[revision])
             for name, (config, split, revision) in READS.items()}
    full = {**os.environ, **env}
    full.pop("HF_TOKEN", None)
    proc = subprocess.run([sys.executable, "-c", READER, json.dumps(reads)], capture_output=True, text=True,
                          env=full, timeout=600, cwd=str(Path(__file__).resolve().parents[2]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.split("@@", 1)[1])
    yield {"results": results, "env": env, "first": first, "latest": server.repos["acme/moving"]["sha"]}
    server.stop()


def read(hub, name) -> dict:
    result = hub["results"][name]
    assert "error" not in result, result
    return result


def refused(hub, name, code) -> str:
    result = hub["results"][name]
    assert result.get("error") == code, result
    return result["message"] + " " + (result.get("hint") or "")


def test_converter_shards_read_every_shard_of_the_split(hub):
    assert read(hub, "shards")["rows"] == ROWS[:30]
    assert read(hub, "shards")["split"] == "train"
    assert read(hub, "shards/test")["rows"] == ROWS[30:35]


def test_readme_configs_read_their_patterns_and_lists(hub):
    assert read(hub, "configs")["rows"] == ROWS[:20]                      # "data/train-*": two shards
    assert read(hub, "configs/validation")["rows"] == ROWS[20:27]         # a list of two files
    extra = read(hub, "configs/extra")
    assert (extra["config"], extra["rows"]) == ("extra", ROWS[27:40])


def test_the_readme_default_config_is_read_when_none_is_given(hub):
    alpha = read(hub, "default-true")
    assert (alpha["config"], alpha["rows"]) == ("alpha", ROWS[:8])        # not beta, listed first
    assert "config not given: using 'alpha' (available: beta, alpha)" in alpha["notices"]
    assert read(hub, "default-true/beta")["rows"] == ROWS[8:20]
    assert hub["results"]["describe:default-true"]["config"] == "alpha"     # the Space's box agrees
    assert hub["results"]["describe:default-true"]["rows"] == ROWS[:8]


def test_an_evaluation_split_alone_is_read(hub):
    assert read(hub, "test-only")["rows"] == ROWS[:9]
    both = read(hub, "validation-dev")                    # datasets reads dev as validation
    assert (both["split"], both["rows"]) == ("validation", ROWS[:16])   # validation.jsonl, then dev.jsonl


def test_arrow_and_compressed_files_are_read(hub):
    assert read(hub, "arrow")["rows"] == ROWS[:11]
    assert read(hub, "csv-gz")["rows"] == ROWS[:12]
    assert read(hub, "json-gz")["rows"] == ROWS[:14]


def test_zstd_files_name_the_package_the_hub_reader_needs(hub):
    text = refused(hub, "jsonl-zst", "bad_format")
    assert "compressed with zstd" in text and "zstandard" in text


def test_a_split_of_two_formats_is_refused_not_read_in_part(hub):
    text = refused(hub, "mixed", "bad_format")
    assert "mixes file formats" in text and "train-b.csv" in text


def test_a_loading_script_is_refused_with_the_reason(hub):
    text = refused(hub, "script", "bad_format")
    assert "loading script (script.py)" in text and "no longer runs dataset scripts" in text
    assert hub["results"]["describe:script"]["error"] == "bad_format"
    assert "loading script" in hub["results"]["describe:script"]["message"]


@pytest.mark.parametrize("name,file", [("lfs-parquet", "data/train.parquet"), ("lfs-csv", "data/train.csv"),
                                       ("lfs-jsonl", "data/train.jsonl")])
def test_git_lfs_pointers_are_refused_as_pointers(hub, name, file):
    text = refused(hub, name, "bad_format")
    assert "Git LFS pointer" in text and file in text
    if name == "lfs-csv":             # the Space's dataset box too: not two rows of pointer lines
        assert "Git LFS pointer" in hub["results"]["describe:lfs-csv"]["message"]


def test_a_repo_without_data_files_is_refused(hub):
    assert "holds no data files" in refused(hub, "empty", "empty_input")
    assert "holds no data files" in refused(hub, "readme-only", "empty_input")


def test_a_branch_and_a_short_sha_read_the_commit_they_name(hub):
    for name in ("moving@v1", "moving@short"):
        pinned = read(hub, name)
        assert (pinned["revision"], pinned["rows"]) == (hub["first"], ROWS[:10])
        assert any(hub["latest"] in n for n in pinned["notices"])
    assert "has no revision 'nope'" in refused(hub, "moving@nope", "not_found")


def test_a_config_or_split_it_lacks_lists_the_ones_it_has(hub):
    assert "Available configs: default." in refused(hub, "moving/bad-config", "bad_config")
    assert "Available splits: train." in refused(hub, "moving/bad-split", "bad_split")
    assert "Available configs: beta, alpha." in refused(hub, "default-true/bad-config", "bad_config")


def test_the_cli_says_why_without_a_traceback(hub):
    for name, words in (("acme/script", "loading script"), ("acme/lfs-csv", "Git LFS pointer"),
                        ("acme/mixed", "mixes file formats")):
        code, _, err = run_cli("scan", name, "--quiet", env=hub["env"])
        assert code == 2 and words in err and "Traceback" not in err, err
    code, out, err = run_cli("scan", "acme/default-true", "--json", "-", "--quiet", env=hub["env"])
    assert code == 0, err
    assert (json.loads(out)["input"]["records"], json.loads(out)["input"]["config"]) == (8, "alpha")
