"""``scan --engine ray`` resumes from its finished near-duplicate partitions (issue 33, item 5), as
contamination and leak resume from finished shards: a driver killed (SIGKILL) after some partitions
were saved is run again and reads those back, and its summary.json is the uninterrupted run's but
for the engine block; tampered or foreign partition files are computed again, never trusted."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import ground_truth as gt  # noqa: E402
import real_data  # noqa: E402
from auditor.clusters import cluster_labels  # noqa: E402
from auditor.distributed.near import ray_find_pairs  # noqa: E402
from auditor.io import resume  # noqa: E402
from auditor.near import pieces  # noqa: E402
from auditor.near.pieces import HOLD_AFTER_ENV  # noqa: E402
from auditor.near import find_pairs  # noqa: E402
from auditor.shingles import shingle_matrix  # noqa: E402
from saved_pieces import kill_after_saved  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: one local Ray for the module)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def own_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDITOR_RESUME_SECRET", str(tmp_path / "secret" / "resume-secret"))


def _texts() -> list[str]:
    """GSM8K test questions, edited copies of 300 of them (clusters) and one template edited 300
    times (a template group), in a seeded order."""
    gsm = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    template = " ".join(gsm[0].split() * 3)[:400]
    texts = gsm[:1000] + real_data.edited_copies(gsm[1000:1300], 4, 0.15, 1) + real_data.edited_copies([template], 300, 0.02, 2)
    return [texts[i] for i in np.random.default_rng(3).permutation(len(texts))]


def _same_pairs(ours, theirs, forest: bool = True) -> None:
    """Equal counts, sample and clusters; and, between two Ray runs of one plan, the same forest
    (the local engine may pick another among equal-score edges)."""
    for name in ("bins", "node_pairs", "record_pairs"):
        np.testing.assert_array_equal(getattr(ours.counts, name), getattr(theirs.counts, name))
    for name in ("a", "b", "jaccard", "node_of", "weight", *(("forest_a", "forest_b", "forest_jaccard") * forest)):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
    assert (ours.candidates, ours.complete, ours.method) == (theirs.candidates, theirs.complete, theirs.method)
    for t in (ours.min_threshold, 0.7, 0.9):
        np.testing.assert_array_equal(cluster_labels(ours, t)[0], cluster_labels(theirs, t)[0])


def _cli(args: list, env: dict, **popen):
    return subprocess.Popen([sys.executable, "-m", "auditor", *args], env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **popen)


def _end_group(proc) -> None:
    """The run's own process group (the CLI and the local Ray it started), ended by its id."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _without_engine(path) -> tuple[str, dict]:
    summary = json.loads(path.read_text(encoding="utf-8"))
    engine = summary.pop("engine")
    return json.dumps(summary, indent=2, sort_keys=True), engine


@pytest.mark.slow
def test_a_killed_scan_resumes_from_its_saved_partitions(tmp_path):
    """The driver is killed (SIGKILL) while it holds after saving 2 partitions; the re-run reads
    those 2 back, computes the others, and writes the uninterrupted run's summary.json."""
    source = tmp_path / "data.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(_texts())),
                      encoding="utf-8")
    shard_dir = tmp_path / "shards"
    short = tempfile.mkdtemp(prefix="nrray")        # Ray's socket paths must stay short
    env = {**os.environ, "RAY_TMPDIR": short, "RAY_ADDRESS": "",
           "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    scan = ["scan", str(source), "--engine", "ray", "--threshold", "0.5", "--quiet"]
    try:
        killed = _cli([*scan, "--shard-dir", str(shard_dir), "--json", str(tmp_path / "killed.json")],
                      {**env, HOLD_AFTER_ENV: "2"})
        try:
            kill_after_saved(killed, shard_dir, 2)
        finally:
            _end_group(killed)
        assert killed.returncode == -signal.SIGKILL
        assert not (tmp_path / "killed.json").exists()
        saved = sorted(p.name for p in shard_dir.iterdir())
        assert len(saved) == 2 and all(p.startswith("near-") for p in saved)      # no temporary file left

        resumed = _cli([*scan, "--shard-dir", str(shard_dir), "--json", str(tmp_path / "resumed.json")], env)
        full = None
        try:
            _, err = resumed.communicate(timeout=600)
            assert resumed.returncode == 0, err[-2000:]
            full = _cli([*scan, "--json", str(tmp_path / "full.json")], env)
            _, err = full.communicate(timeout=600)
            assert full.returncode == 0, err[-2000:]
        finally:
            _end_group(resumed)
            if full is not None:
                _end_group(full)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    body, engine = _without_engine(tmp_path / "resumed.json")
    full_body, full_engine = _without_engine(tmp_path / "full.json")
    assert body == full_body
    assert engine["partitions_resumed"] == 2 and full_engine["partitions_resumed"] == 0
    assert engine["partitions"] == full_engine["partitions"] > 2
    # every partition is now saved: one file each, all of them read by the next run
    assert len(list(shard_dir.iterdir())) == engine["partitions"]
    # Independent ground truth: the pure-Python all-pairs reference's count at 0.5.
    near = json.loads(full_body)["near_duplicates"]
    assert near["pairs"] == gt.reference(_texts()).pair_count(0.5)


def _files(shard_dir) -> list:
    return sorted(shard_dir.glob("near-*.json"))


def test_tampered_foreign_and_other_code_partition_files_are_computed_again(tmp_path, monkeypatch):
    matrix = shingle_matrix(_texts())
    honest = ray_find_pairs(matrix, 0.5, "exact", partitions=4)
    shard_dir = tmp_path / "shards"
    stats: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "exact", partitions=4, shard_dir=shard_dir, stats=stats), honest)
    assert stats["partitions_resumed"] == 0 and len(_files(shard_dir)) == stats["partitions"] >= 3
    total = stats["partitions"]
    again: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "exact", partitions=4, shard_dir=shard_dir, stats=again), honest)
    assert again == {"partitions": total, "partitions_resumed": total}

    # One file's payload edited (its pair counts cleared), the signature left as it was: not used.
    target = max(_files(shard_dir), key=lambda p: p.stat().st_size)
    mac, _, body = target.read_text().partition("\n")
    data = json.loads(body)
    empty = pieces._encode(np.zeros(0, np.int64), "i8")
    assert data["payload"]["piece"]["bins"] != empty          # a piece with pairs
    data["payload"]["piece"].update(bins=empty, node_pairs=empty, record_pairs=empty)
    tampered = mac + "\n" + json.dumps(data, sort_keys=True)
    target.write_text(tampered)
    edited: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "exact", partitions=4, shard_dir=shard_dir, stats=edited), honest)
    assert edited["partitions_resumed"] == total - 1
    assert target.read_text() != tampered                  # computed again and replaced

    # Another data set's partitions, signed by this user but renamed to this run's key: not used.
    other = shingle_matrix(_texts()[:1500])
    other_dir = tmp_path / "other"
    ray_find_pairs(other, 0.5, "exact", partitions=4, shard_dir=other_dir)
    key = _files(shard_dir)[0].name.split("-")[1]
    for path in _files(shard_dir):
        path.unlink()
    for path in _files(other_dir):
        (shard_dir / f"near-{key}-{path.name.rsplit('-', 1)[1]}").write_text(path.read_text())
    foreign: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "exact", partitions=4, shard_dir=shard_dir, stats=foreign), honest)
    assert foreign["partitions_resumed"] == 0

    # Signed with another secret (a file written by someone else): not used.
    monkeypatch.setenv("AUDITOR_RESUME_SECRET", str(tmp_path / "secret2" / "resume-secret"))
    stranger: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "exact", partitions=4, shard_dir=shard_dir, stats=stranger), honest)
    assert stranger["partitions_resumed"] == 0

    # Written by other code (another version): not used. Another partition count: another plan.
    monkeypatch.setattr(resume, "code_version", lambda: "another-version")
    for partitions in (4, 5):
        newer: dict = {}
        _same_pairs(ray_find_pairs(matrix, 0.5, "exact", partitions=partitions, shard_dir=shard_dir, stats=newer),
                    ray_find_pairs(matrix, 0.5, "exact", partitions=partitions))
        assert newer["partitions_resumed"] == 0


def test_lsh_resumes_the_partitions_left_and_equals_the_local_lsh(tmp_path):
    matrix = shingle_matrix(_texts())
    local = find_pairs(matrix, 0.5, "lsh", seed=3)
    shard_dir = tmp_path / "shards"
    first: dict = {}
    uninterrupted = ray_find_pairs(matrix, 0.5, "lsh", seed=3, partitions=5, shard_dir=shard_dir, stats=first)
    _same_pairs(uninterrupted, local, forest=False)
    files = _files(shard_dir)
    # every LSH partition is saved (one no band was routed to, as empty), so a full re-run runs nothing
    assert len(files) == 5 + len(local.dense_groups) and first["partitions_resumed"] == 0
    for path in files[1::2]:                       # half of them lost, as after a crash
        path.unlink()
    again: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "lsh", seed=3, partitions=5, shard_dir=shard_dir, stats=again),
                uninterrupted)
    lost_pieces = {p.name for p in files[1::2]} - {p.name for p in _files(shard_dir)}
    assert not lost_pieces and again["partitions"] == first["partitions"]
    assert first["partitions"] - len(files[1::2]) <= again["partitions_resumed"] < first["partitions"]
    third: dict = {}
    _same_pairs(ray_find_pairs(matrix, 0.5, "lsh", seed=3, partitions=5, shard_dir=shard_dir, stats=third),
                uninterrupted)
    assert third["partitions_resumed"] == first["partitions"]
    # another seed is another plan
    seeded: dict = {}
    ray_find_pairs(matrix, 0.5, "lsh", seed=4, partitions=5, shard_dir=shard_dir, stats=seeded)
    assert seeded["partitions_resumed"] == 0


@pytest.mark.slow
def test_dedup_on_ray_keeps_its_partitions_and_writes_the_local_copy(tmp_path):
    """``dedup --engine ray --shard-dir``: the copy and manifest the local engine writes, and the
    search's partitions saved for a re-run."""
    texts = _texts()
    source = tmp_path / "data.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    short = tempfile.mkdtemp(prefix="ndray")
    env = {**os.environ, "RAY_TMPDIR": short, "RAY_ADDRESS": "",
           "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    runs = {}
    try:
        for engine in ("local", "ray"):
            extra = ["--shard-dir", str(tmp_path / "shards")] if engine == "ray" else []
            proc = _cli(["dedup", str(source), "--threshold", "0.5", "--engine", engine, *extra, "--quiet",
                         "--out", str(tmp_path / f"{engine}.jsonl"), "--json", str(tmp_path / f"{engine}.json")], env)
            try:
                _, err = proc.communicate(timeout=600)
            finally:
                _end_group(proc)
            assert proc.returncode == 0, err[-2000:]
            runs[engine] = [(tmp_path / f"{engine}{ext}").read_bytes()
                            for ext in (".jsonl", ".jsonl.manifest.json", ".json")]
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert runs["ray"][0] == runs["local"][0]
    summary = json.loads(runs["ray"][2])
    assert summary == json.loads(runs["local"][2])
    # Ground truth: one record kept per cluster of the all-pairs reference at 0.5.
    reference = gt.reference(texts)
    singles = len(texts) - sum(len(c) for c in reference.clusters(0.5))
    assert len(runs["ray"][0].splitlines()) == singles + reference.cluster_count(0.5)
    assert _files(tmp_path / "shards")
