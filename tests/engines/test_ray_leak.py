"""``leak`` / ``clean`` with ``--engine ray`` against the local engine and against planted ground
truth, on real data: Spider train vs dev (answers and groups), and GSM8K train split into shards
of uneven size and kind (JSONL, an empty shard, gzip, Parquet) with GSM8K test questions planted
at known rows, exactly and edited. Plus: a corrupt shard, a run interrupted and resumed from its
shard folder, clean's drop list, and the CLI joining a running Ray by address.

One local Ray (2 CPUs) serves the whole module; ``ray_session`` joins it and leaves it running.
"""
from __future__ import annotations

import gzip
import json
import os
import re

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor.clean import clean  # noqa: E402
from auditor.engines import EngineSettings, clean as clean_on  # noqa: E402
from auditor.distributed import leak as ray_engine  # noqa: E402
from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from auditor.settings import LeakSettings, RoleNames  # noqa: E402
from auditor.settings import NearSettings  # noqa: E402
from ray_leak_helpers import edit, local_ray, read  # noqa: E402,F401  (local_ray: autouse)

# GSM8K train row -> (GSM8K test row, how it is planted)
PLANTED = {10: (0, "copy"), 2500: (7, "edited"), 3100: (3, "question"), 5000: (0, "copy"), 7000: (12, "edited")}
THRESHOLD = 0.6


@pytest.fixture(scope="module")
def gsm8k(real_data, tmp_path_factory):
    """GSM8K train with test items planted (PLANTED), as five shards: 2,000 rows of JSONL, an empty
    file, 2,500 rows gzip'd, 1,000 rows of Parquet and the rest as JSONL."""
    train, test = read(real_data / "gsm8k/train.jsonl"), read(real_data / "gsm8k/test.jsonl")
    for row, (item, how) in PLANTED.items():
        source = test[item]
        train[row] = {"copy": dict(source), "edited": {"question": edit(source["question"]), "answer": "42"},
                      "question": {"question": source["question"], "answer": train[row]["answer"]}}[how]
    folder = tmp_path_factory.mktemp("ray_leak") / "train"
    folder.mkdir()
    lines = [json.dumps(r) + "\n" for r in train]
    (folder / "part-0.jsonl").write_text("".join(lines[:2000]), encoding="utf-8")
    (folder / "part-1.jsonl").write_text("", encoding="utf-8")
    with gzip.open(folder / "part-2.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(lines[2000:4500])
    pq.write_table(pa.Table.from_pylist(train[4500:5500]), folder / "part-3.parquet")
    (folder / "part-4.jsonl").write_text("".join(lines[5500:]), encoding="utf-8")
    return folder, train, test, real_data / "gsm8k/test.jsonl"


def settings(threshold=THRESHOLD, **roles) -> LeakSettings:
    return LeakSettings(near=NearSettings(threshold=threshold), roles_a=RoleNames(**roles))


def without_engine(summary: dict) -> dict:
    summary = dict(summary)
    summary.pop("engine")
    return summary


def shingles(text: str) -> set:
    """Word 3-grams of the lowercased text, written independently of auditor.shingles."""
    words = text.lower().split()
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)} if len(words) >= 3 else {tuple(words)}


def test_spider_train_vs_dev_equals_local(real_data):
    a, b = real_data / "spider/train_spider.jsonl", real_data / "spider/dev.jsonl"
    wanted = settings(0.7, answer="query", group="db_id")
    local = leak(str(a), str(b), settings=wanted)
    on_ray = ray_leak(str(a), str(b), settings=wanted, quiet=True)
    assert on_ray.summary()["engine"]["name"] == "ray"
    assert without_engine(on_ray.summary()) == local.summary()      # counts, fingerprints, sample, groups
    assert on_ray.matches == local.matches and on_ray.near.pairs == local.near.pairs
    assert on_ray.evidence_csv() == local.evidence_csv() and on_ray.markdown() == local.markdown()
    # Ground truth: Spider's train and dev share no database (its split is by database), and
    # every identical-both match names a train record with the same question and SQL.
    train, dev = read(a), read(b)
    assert on_ray.shared_groups == sorted({r["db_id"] for r in train} & {r["db_id"] for r in dev}) == []
    for b_row, m in on_ray.matches.items():
        for a_row in m.get("identical_both", []):
            assert " ".join(train[a_row]["question"].lower().split()) == " ".join(dev[b_row]["question"].lower().split())
    assert on_ray.counts["identical_text"] > 0 and on_ray.counts["near_duplicate"] > 0


def test_evidence_carries_answers_and_ids_from_the_shards(real_data, tmp_path):
    """evidence.csv is one format for both engines: A's answer and id of each pair come back from
    Ray's tasks (A is never held whole), equal to the local engine's and to the files' own."""
    import csv
    import io
    train, dev = read(real_data / "spider/train_spider.jsonl"), read(real_data / "spider/dev.jsonl")
    folder = tmp_path / "a"
    folder.mkdir()
    rows = [{"id": f"train-{i}", **r} for i, r in enumerate(train)]
    for k, lo in enumerate(range(0, len(rows), 2500)):
        (folder / f"part-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[lo:lo + 2500]))
    b = tmp_path / "dev.jsonl"
    b.write_text("".join(json.dumps({"id": f"dev-{i}", **r}) + "\n" for i, r in enumerate(dev)))
    wanted = settings(0.7, answer="query")
    local = leak(str(folder), str(b), settings=wanted)
    on_ray = ray_leak(str(folder), str(b), settings=wanted, quiet=True)
    assert on_ray.evidence_csv() == local.evidence_csv()
    evidence = list(csv.DictReader(io.StringIO(on_ray.evidence_csv())))
    assert evidence and len(evidence) == len(local.matches)
    for r in evidence:
        a_row, b_row = int(r["a_row"]), int(r["b_row"])
        assert (r["a_id"], r["b_id"]) == (f"train-{a_row}", f"dev-{b_row}")
        assert (r["a_answer"], r["b_answer"]) == (train[a_row]["query"], dev[b_row]["query"])
        assert r["a_text"] == train[a_row]["question"]


def test_gsm8k_shards_equal_local_and_find_the_planted_rows(gsm8k):
    folder, train, test, test_path = gsm8k
    local = leak(str(folder), str(test_path), settings=settings())
    on_ray = ray_leak(str(folder), str(test_path), settings=settings(), quiet=True)
    engine = on_ray.summary()["engine"]
    assert engine["shards"] == 5 and engine["shards_resumed"] == 0
    assert without_engine(on_ray.summary()) == local.summary()
    assert on_ray.matches == local.matches and on_ray.near.pairs == local.near.pairs
    assert on_ray.a.records == len(train) and on_ray.a.fingerprint == local.a.fingerprint
    assert on_ray.evidence_csv() == local.evidence_csv()
    for row, (item, how) in PLANTED.items():       # ground truth: the planted rows, at their global row
        m = on_ray.matches[item]
        kinds = {"copy": ("identical_both", "identical_text", "near_duplicate"),
                 "question": ("identical_text", "near_duplicate"), "edited": ("near_duplicate",)}[how]
        for kind in kinds:
            assert row in m[kind], (row, item, kind)
        if how == "edited":
            x, y = shingles(train[row]["question"]), shingles(test[item]["question"])
            assert m["jaccard"] == pytest.approx(len(x & y) / len(x | y), abs=1e-12)
    # Row 0 of test was planted twice: both copies are listed, lowest row first.
    assert on_ray.matches[0]["identical_both"] == [10, 5000]


def test_records_without_text_are_counted_by_both_engines(real_data, tmp_path):
    """Records with no question (missing, null, "", blank) on either side are counted in summary.json
    and stated in REPORT.md by both engines alike; they match by their answer only."""
    train, test = read(real_data / "gsm8k/train.jsonl")[:300], read(real_data / "gsm8k/test.jsonl")[:100]
    blanks = [{"answer": "#### 1"}, {"question": None, "answer": "#### 2"}, {"question": "", "answer": "#### 3"},
              {"question": " \t", "answer": "#### 4"}]
    a_rows, b_rows = train[:150] + blanks + train[150:], test + blanks[:2]
    folder = tmp_path / "train"
    folder.mkdir()
    (folder / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in a_rows[:152]), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(a_rows[152:]), folder / "part-1.parquet")
    b_path = tmp_path / "test.jsonl"
    b_path.write_text("".join(json.dumps(r) + "\n" for r in b_rows), encoding="utf-8")
    local = leak(str(folder), str(b_path), settings=settings())
    on_ray = ray_leak(str(folder), str(b_path), settings=settings(), quiet=True)
    assert without_engine(on_ray.summary()) == local.summary()
    blank = (lambda rows: sum(not (r.get("question") or "").strip() for r in rows))
    assert (local.a.no_text, local.b.no_text) == (blank(a_rows), blank(b_rows)) == (4, 2)
    assert on_ray.summary()["a"]["no_text"] == 4
    md = on_ray.markdown()
    assert "**4 of A's 304 records have no text** (missing, null or blank)" in md
    assert "**2 of B's 102 records have no text**" in md
    for b_row, a_row in ((100, 150), (101, 151)):      # a blank B record: matched by its answer alone
        assert local.matches[b_row] == {"identical_answer": [a_row]}


def test_small_batches_and_char_shingles_equal_local(gsm8k):
    """Several batches per task (matches merged across batches) and character shingles."""
    folder, _, _, test_path = gsm8k
    wanted = LeakSettings(near=NearSettings(threshold=0.5, shingle="char:6"))
    local = leak(str(folder), str(test_path), settings=wanted)
    on_ray = ray_leak(str(folder), str(test_path), settings=wanted, quiet=True, batch_rows=700)
    assert without_engine(on_ray.summary()) == local.summary()
    assert on_ray.matches == local.matches and on_ray.near.pairs == local.near.pairs > 5


def test_clean_on_ray_drops_what_local_drops(gsm8k):
    folder, _, test, test_path = gsm8k
    local = clean(str(test_path), [str(folder)], near=True, threshold=THRESHOLD)
    on_ray = clean_on(str(test_path), [str(folder)], near=True, threshold=THRESHOLD,
                      engine=EngineSettings("ray", quiet=True))
    assert on_ray.dropped == local.dropped and on_ray.kept == local.kept
    assert {d["row"] for d in on_ray.dropped} >= {item for item, _ in PLANTED.values()}
    assert len(on_ray.kept) == len(test) - len(on_ray.dropped)


def test_a_corrupt_shard_is_named(gsm8k, tmp_path):
    folder, _, _, test_path = gsm8k
    bad = tmp_path / "train"
    bad.mkdir()
    for path in folder.iterdir():
        (bad / path.name).write_bytes(path.read_bytes())
    data = (bad / "part-2.jsonl.gz").read_bytes()
    (bad / "part-2.jsonl.gz").write_bytes(data[: len(data) // 2])      # a truncated download
    with pytest.raises(AuditorError) as caught:
        ray_leak(str(bad), str(test_path), settings=settings(), quiet=True)
    assert caught.value.code == "bad_format" and "part-2.jsonl.gz" in caught.value.message


def test_a_dying_worker_is_retried_with_the_same_result(gsm8k, tmp_path, monkeypatch):
    folder, _, _, test_path = gsm8k
    marker = tmp_path / "died-once"
    monkeypatch.setenv(ray_engine.FAIL_ONCE_ENV, str(marker))
    on_ray = ray_leak(str(folder), str(test_path), settings=settings(), quiet=True)
    assert marker.exists()                   # a worker did exit mid-task
    assert without_engine(on_ray.summary()) == leak(str(folder), str(test_path), settings=settings()).summary()


def test_an_interrupted_run_resumes_from_its_shard_folder(gsm8k, tmp_path, monkeypatch):
    folder, _, _, test_path = gsm8k
    shard_dir = tmp_path / "shards"
    monkeypatch.setenv(ray_engine.STOP_AFTER_ENV, "2")
    with pytest.raises(KeyboardInterrupt):
        ray_leak(str(folder), str(test_path), settings=settings(), quiet=True, shard_dir=shard_dir)
    saved = list(shard_dir.iterdir())
    assert len(saved) == 2 and not [p for p in saved if p.name.startswith(".")]
    monkeypatch.delenv(ray_engine.STOP_AFTER_ENV)
    resumed = ray_leak(str(folder), str(test_path), settings=settings(), quiet=True, shard_dir=shard_dir)
    assert resumed.engine["shards_resumed"] == 2 and len(list(shard_dir.iterdir())) == 5
    assert without_engine(resumed.summary()) == leak(str(folder), str(test_path), settings=settings()).summary()
    # Other settings do not reuse these results.
    other = ray_leak(str(folder), str(test_path), settings=settings(0.8), quiet=True, shard_dir=shard_dir)
    assert other.engine["shards_resumed"] == 0


def test_a_shard_rewritten_with_the_same_size_is_compared_again(gsm8k, tmp_path):
    _, train, test, test_path = gsm8k
    folder, shard_dir = tmp_path / "a", tmp_path / "shards"
    folder.mkdir()
    planted = "".join(json.dumps(r) + "\n" for r in test[:4]).encode()
    clean_rows = "".join(json.dumps(r) + "\n" for r in train[20:24]).encode()[:len(planted)]
    body = clean_rows[:clean_rows.rfind(b"\n") + 1]
    line = json.dumps({"question": "", "answer": ""}).encode() + b"\n"
    filler = body + json.dumps({"question": "y" * (len(planted) - len(body) - len(line)), "answer": ""}).encode() + b"\n"
    assert len(filler) == len(planted)
    (folder / "part-0.jsonl").write_bytes(filler)
    first = ray_leak(str(folder), str(test_path), settings=settings(), quiet=True, shard_dir=shard_dir)
    assert not first.any_leak()
    (folder / "part-0.jsonl").write_bytes(planted)
    os.utime(folder / "part-0.jsonl", ns=(10**18, 10**18))
    again = ray_leak(str(folder), str(test_path), settings=settings(), quiet=True, shard_dir=shard_dir)
    assert again.engine["shards_resumed"] == 0
    assert without_engine(again.summary()) == leak(str(folder), str(test_path), settings=settings()).summary()
    assert again.any_leak()


@pytest.mark.slow
def test_cli_leak_and_clean_on_ray(gsm8k, tmp_path, run_cli):
    """The CLI joins this module's Ray by address (--ray-address), as it would a cluster's head."""
    folder, _, _, test_path = gsm8k
    address = ray.get_runtime_context().gcs_address
    code, out, err = run_cli("leak", folder, test_path, "--engine", "ray", "--ray-address", address,
                             "--threshold", str(THRESHOLD), "--json", "-", "--quiet", timeout=300)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["engine"]["name"] == "ray"
    assert without_engine(summary) == leak(str(folder), str(test_path), settings=settings()).summary()
    out_file = tmp_path / "clean.jsonl"
    code, _, err = run_cli("clean", test_path, "--against", folder, "--near", "--threshold", str(THRESHOLD),
                           "--out", out_file, "--engine", "ray", "--ray-address", address, "--quiet", timeout=300)
    assert code == 0, err
    local = clean(str(test_path), [str(folder)], near=True, threshold=THRESHOLD)
    assert [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()] == local.kept
    code, _, err = run_cli("leak", folder, test_path, "--engine", "ray", "--method", "lsh")
    assert code == 2 and "--method lsh" in err and "Traceback" not in err
    assert not re.search(r"Traceback", err)
