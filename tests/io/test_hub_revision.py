"""A Hub audit records the dataset's commit, and ``--revision`` (``revision=`` in the library) reads
that commit again after the dataset has moved on, saying that a newer one exists.

The local hub (tests/hub_server.py) serves one dataset at two commits: the first holds 30 GSM8K train
questions, the second 40 (the first 30 and 10 more). Every expected figure is counted here from the
rows written, never from the tool's output."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import real_data  # noqa: E402
from conftest import run_cli  # noqa: E402
from hub_server import FakeHub  # noqa: E402

REPO = "acme/moving"


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    rows = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/train.jsonl")[:40]]
    rows[5] = dict(rows[4])            # one exact duplicate in both commits
    server = FakeHub(tmp_path_factory.mktemp("hub"))
    server.add_repo(REPO, {"data/train.jsonl": jsonl(rows[:30])})
    first = server.repos[REPO]["sha"]
    server.add_repo(REPO, {"data/train.jsonl": jsonl(rows)})
    endpoint = server.start()
    home = tmp_path_factory.mktemp("hf")
    env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(home), "HF_DATASETS_CACHE": str(home / "ds"),
           "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0"}
    yield {"server": server, "env": env, "first": first, "latest": server.repos[REPO]["sha"], "rows": rows}
    server.stop()


def scan_json(hub, *args):
    code, out, err = run_cli("scan", REPO, "--json", "-", "--quiet", *args,
                             env={k: v for k, v in hub["env"].items()})
    assert code == 0, err
    return json.loads(out)


def test_an_audit_records_the_commit_it_read(hub):
    assert hub["first"] != hub["latest"]
    summary = scan_json(hub)
    assert summary["input"]["revision"] == hub["latest"]
    assert summary["input"]["records"] == 40
    assert not any("newer" in n for n in summary["input"]["notices"])


@pytest.mark.slow
def test_the_revision_reads_the_pinned_commit_and_says_a_newer_one_exists(hub, tmp_path):
    summary = scan_json(hub, "--revision", hub["first"], "--out-dir", str(tmp_path))
    assert summary["input"]["revision"] == hub["first"]
    assert summary["input"]["records"] == 30                 # the first commit's rows, not the latest's
    assert summary["exact_duplicates"]["text"]["redundant"] == 1
    newer = [n for n in summary["input"]["notices"] if "newer" in n]
    assert newer and hub["latest"] in newer[0]
    report = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert f"Hub revision `{hub['first']}`" in report
    assert hub["latest"] in report
    # The latest commit asked by its sha: the same audit as without a revision, no notice.
    assert scan_json(hub, "--revision", hub["latest"]) == scan_json(hub)


def test_a_revision_the_dataset_never_had_is_a_clear_error(hub):
    code, _, err = run_cli("scan", REPO, "--revision", "0" * 40, "--quiet", env=hub["env"])
    assert code == 2
    assert f"{REPO} has no revision" in err and "Traceback" not in err
    code, _, err = run_cli("scan", "example:gsm8k", "--revision", hub["first"], "--quiet", env=hub["env"])
    assert code == 2 and "applies to Hugging Face datasets only" in err
    code, _, err = run_cli("scan", REPO, "--revision", "a b", "--quiet", env=hub["env"])
    assert code == 2 and "is not a commit sha" in err


def test_the_library_takes_the_revision_too(hub):
    """In a fresh interpreter (HF_ENDPOINT is read at import): auditor.scan(revision=) and auditor.load."""
    code = ("import json, auditor\n"
            f"r = auditor.scan({REPO!r}, revision={hub['first']!r})\n"
            f"t = auditor.load({REPO!r})\n"
            "print(json.dumps([r.summary()['input']['revision'], r.records, t.revision, len(t.rows)]))\n")
    env = {**os.environ, **hub["env"]}
    env.pop("HF_TOKEN", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          cwd=str(Path(__file__).resolve().parents[2]))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [hub["first"], 30, hub["latest"], 40]
