"""``scan`` and ``dedup`` on the local engine with ``--shard-dir`` search in pieces and save each as it
is finished (issue 33, item 7): a scan killed (SIGKILL) after two saved pieces is run again, reads
those back, and writes the uninterrupted run's summary.json but for the engine block; its curve is
the one-pass scan's, and its pair count the all-pairs reference's. Without --shard-dir nothing
changes: the one-pass search, no engine block."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import ground_truth as gt
import real_data
from auditor.near.pieces import HOLD_AFTER_ENV
from saved_pieces import kill_after_saved

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _texts() -> list[str]:
    """GSM8K test questions, edited copies of 300 of them and one question edited 500 times (a
    template group), in a seeded order."""
    gsm = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    long = " ".join(gsm[0].split() * 3)[:400]
    texts = gsm[:1000] + real_data.edited_copies(gsm[1000:1300], 3, 0.15, 1) + real_data.edited_copies([long], 500,
                                                                                                      0.1, 2)
    return [texts[i] for i in np.random.default_rng(3).permutation(len(texts))]


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "AUDITOR_RESUME_SECRET": str(tmp_path / "secret" / "resume-secret"),
            "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(_texts())),
                    encoding="utf-8")
    return path


def _run(args: list, env: dict) -> None:
    proc = subprocess.run([sys.executable, "-m", "auditor", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _summary(path) -> tuple[dict, dict | None]:
    summary = json.loads(path.read_text(encoding="utf-8"))
    return summary, summary.pop("engine", None)


def test_a_killed_local_scan_resumes_from_its_saved_pieces(tmp_path, source, env):
    shard_dir = tmp_path / "shards"
    scan = ["scan", str(source), "--threshold", "0.5", "--quiet"]
    killed = subprocess.Popen([sys.executable, "-m", "auditor", *scan, "--shard-dir", str(shard_dir), "--json",
                               str(tmp_path / "killed.json")], env={**env, HOLD_AFTER_ENV: "2"}, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    kill_after_saved(killed, shard_dir, 2)
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed.json").exists()
    assert len(list(shard_dir.iterdir())) == 2          # two pieces, no temporary file left

    _run([*scan, "--shard-dir", str(shard_dir), "--json", str(tmp_path / "resumed.json")], env)
    _run([*scan, "--shard-dir", str(tmp_path / "fresh"), "--json", str(tmp_path / "full.json")], env)
    _run([*scan, "--json", str(tmp_path / "one-pass.json")], env)
    resumed, engine = _summary(tmp_path / "resumed.json")
    full, full_engine = _summary(tmp_path / "full.json")
    one_pass, one_pass_engine = _summary(tmp_path / "one-pass.json")
    assert resumed == full
    assert engine["name"] == full_engine["name"] == "local"
    assert engine["partitions_resumed"] == 2 and full_engine["partitions_resumed"] == 0
    assert engine["partitions"] == full_engine["partitions"] > 2
    assert len(list(shard_dir.iterdir())) == engine["partitions"]      # every piece now saved, once
    assert one_pass_engine is None
    assert resumed["curve"] == one_pass["curve"]
    assert resumed["near_duplicates"]["pairs"] == gt.reference(_texts()).pair_count(0.5)


def test_dedup_with_a_shard_dir_writes_what_the_one_pass_dedup_writes(tmp_path, source, env):
    for name, extra in (("pieces", ["--shard-dir", str(tmp_path / "shards")]), ("one-pass", [])):
        _run(["dedup", str(source), "--threshold", "0.7", "--quiet", "--out", str(tmp_path / f"{name}.jsonl"), *extra],
             env)
    assert (tmp_path / "pieces.jsonl").read_bytes() == (tmp_path / "one-pass.jsonl").read_bytes()
    kept = sum(1 for _ in open(tmp_path / "pieces.jsonl", encoding="utf-8"))
    assert 0 < kept < len(_texts())
    assert list((tmp_path / "shards").glob("near-*.json"))


def test_a_local_scan_with_an_out_dir_alone_stays_one_pass(tmp_path, source, env):
    """--out-dir implies a shard folder on Ray only: locally the search stays one pass (From the
    session's review of this change)."""
    _run(["scan", str(source), "--threshold", "0.5", "--quiet", "--out-dir", str(tmp_path / "out")], env)
    summary, engine = _summary(tmp_path / "out" / "summary.json")
    assert engine is None and not (tmp_path / "out" / "shards").exists()
    assert summary["near_duplicates"]["pairs"] == gt.reference(_texts()).pair_count(0.5)
