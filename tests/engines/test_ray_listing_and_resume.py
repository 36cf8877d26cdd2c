"""``--engine ray`` (contamination, leak): shard layouts and resume cases, each against the local
engine and rows planted in the test: linked folders, Spark-style folders, a glob matching nothing,
shards rewritten with their old size and time, a stale ``ray start`` record and SIGTERM."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
import pytest
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
import real_data as real_data_files  # noqa: E402
from auditor.contamination import contamination  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.io.shards import list_shards  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402


# GSM8K test row -> the corpus row it is planted at (the corpus: GSM8K train, question + answer)
PLANTED = {0: 3, 5: 1200, 17: 2701, 42: 5000, 100: 7000}


@pytest.fixture(scope="module")
def gsm8k():
    train = real_data_files.rows("gsm8k/train.jsonl")
    test = real_data_files.rows("gsm8k/test.jsonl")
    texts = [r["question"] + " " + r["answer"] for r in train]
    for item, row in PLANTED.items():
        texts[row] = test[item]["question"]
    return texts, test


def without_engine(summary: dict) -> dict:
    summary = json.loads(json.dumps(summary))
    summary.pop("engine", None)
    return summary


def found(result) -> dict:
    return {it["benchmark_row"]: it["corpus_rows"] for it in result.items}


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _rewrite_same_size_same_mtime(path, row: int, text: str, key: str = "text") -> None:
    """Record ``row`` of the JSONL shard ``path`` replaced by one with ``text`` (padded with spaces
    to the old line's length), the file's size and modification time as they were."""
    before = os.stat(path)
    lines = path.read_bytes().split(b"\n")
    old = json.loads(lines[row])
    new = {**old, key: text}
    pad = len(lines[row]) - len(json.dumps(new).encode())
    assert pad >= 0
    new[key] = text + " " * pad
    lines[row] = json.dumps(new).encode()
    path.write_bytes(b"\n".join(lines))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_linked_folder_is_not_entered_and_a_link_loop_not_followed(gsm8k, tmp_path):
    """From the round-4 review of the Ray engine."""
    texts, _ = gsm8k
    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.jsonl").write_text(jsonl(rows[:4000]), encoding="utf-8")
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "linked").symlink_to(elsewhere, target_is_directory=True)
    (corpus / "sub" / "up").symlink_to("..", target_is_directory=True)        # a loop
    (corpus / "b.jsonl").write_text(jsonl(rows[4000:]), encoding="utf-8")
    (corpus / "sub" / "c.jsonl").symlink_to(elsewhere / "a.jsonl")            # a linked file is read
    on_ray = ray_contamination(str(corpus), "gsm8k", quiet=True)
    # Ground truth: b.jsonl (rows 4000..) then sub/c.jsonl (rows 0..3999), each once.
    expected_rows = len(rows) - 4000 + 4000
    assert on_ray.corpus_records == expected_rows and on_ray.engine["shards"] == 2
    planted = found(on_ray)
    assert 5000 - 4000 in planted[42] and 7000 - 4000 in planted[100]
    assert (len(rows) - 4000) + 3 in planted[0] and (len(rows) - 4000) + 1200 in planted[5]
    assert without_engine(on_ray.summary()) == contamination(str(corpus), "gsm8k").summary()
    names = [s.name for s in list_shards(str(corpus))[1]]
    assert names == ["b.jsonl", os.path.join("sub", "c.jsonl")]


def test_a_spark_style_folder_of_mixed_shards_equals_local(gsm8k, tmp_path):
    """From the round-4 review of the Ray engine."""
    texts, _ = gsm8k
    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    folder = tmp_path / "spark"
    folder.mkdir()
    (folder / "part-00000.jsonl").write_text(jsonl(rows[:10]), encoding="utf-8")
    with gzip.open(folder / "part-00001.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(jsonl(rows[10:5000]))
    (folder / "part-00002.jsonl").write_text("", encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(rows[5000:6000]), folder / "part-00003.parquet", compression="zstd")
    (folder / "part-00004.json").write_text(json.dumps(rows[6000:7000]), encoding="utf-8")
    (folder / "part-00005.jsonl").write_text(jsonl(rows[7000:]), encoding="utf-8")
    (folder / "_SUCCESS").write_text("", encoding="utf-8")
    (folder / ".part-00005.jsonl.crc").write_bytes(b"\x00crc")
    (folder / ".part-00003.parquet.crc").write_bytes(b"\x00crc")
    on_ray = ray_contamination(str(folder), "gsm8k", quiet=True)
    assert on_ray.corpus_records == len(rows) and on_ray.engine["shards"] == 6
    assert all(row in found(on_ray)[item] for item, row in PLANTED.items())
    assert without_engine(on_ray.summary()) == contamination(str(folder), "gsm8k").summary()


def test_a_glob_that_matches_nothing_names_the_pattern(tmp_path):
    """From the round-4 review of the Ray engine."""
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n', encoding="utf-8")
    pattern = str(tmp_path / "nothing" / "*.jsonl")
    with pytest.raises(AuditorError) as caught:
        ray_contamination(pattern, "gsm8k", quiet=True)
    assert caught.value.code == "not_found" and repr(pattern) in caught.value.message
    assert "matches no" in caught.value.message


def test_a_shard_rewritten_with_its_old_size_and_time_is_scanned_again(gsm8k, tmp_path):
    """From the round-4 review of the Ray engine."""
    texts, test = gsm8k
    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    folder = tmp_path / "corpus"
    folder.mkdir()
    for k, (lo, hi) in enumerate(((0, 2500), (2500, 5000), (5000, len(rows)))):
        (folder / f"part-{k}.jsonl").write_text(jsonl(rows[lo:hi]), encoding="utf-8")
    shard_dir = tmp_path / "shards"
    first = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert 300 not in found(first)
    # Between the runs, shard 1's longest record becomes GSM8K test question 300 (same bytes in all).
    lines = (folder / "part-1.jsonl").read_text(encoding="utf-8").splitlines()
    row = max(range(len(lines)), key=lambda k: len(lines[k]))
    _rewrite_same_size_same_mtime(folder / "part-1.jsonl", row, test[300]["question"])
    again = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert again.engine["shards_resumed"] == 2
    assert found(again)[300] == [2500 + row]
    assert without_engine(again.summary()) == contamination(str(folder), "gsm8k").summary()
    # Unchanged since: all three taken from the folder, the same report.
    third = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert third.engine["shards_resumed"] == 3 and third.items == again.items


def test_leak_resume_compares_a_rewritten_shard_again(real_data, tmp_path):
    """From the round-4 review of the Ray engine."""
    train = real_data_files.rows("gsm8k/train.jsonl")
    test_path = real_data / "gsm8k" / "test.jsonl"
    test = real_data_files.rows("gsm8k/test.jsonl")
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "part-0.jsonl").write_text(jsonl(train[:3000]), encoding="utf-8")
    (folder / "part-1.jsonl").write_text(jsonl(train[3000:]), encoding="utf-8")
    shard_dir = tmp_path / "shards"
    first = ray_leak(str(folder), str(test_path), quiet=True, shard_dir=shard_dir)
    # A's row 3000 + k becomes test item 9's question (its answer kept): an identical text.
    lines = (folder / "part-1.jsonl").read_text(encoding="utf-8").splitlines()
    k = max(range(len(lines)), key=lambda i: len(json.loads(lines[i])["question"]))
    _rewrite_same_size_same_mtime(folder / "part-1.jsonl", k, test[9]["question"], key="question")
    again = ray_leak(str(folder), str(test_path), quiet=True, shard_dir=shard_dir)
    assert again.engine["shards_resumed"] == 1
    assert 3000 + k in again.matches[9]["identical_text"]
    assert 9 not in first.matches or 3000 + k not in first.matches[9].get("identical_text", [])
    assert without_engine(again.summary()) == without_engine(leak(str(folder), str(test_path)).summary())


@pytest.mark.sweep
def test_a_stale_ray_start_record_and_sigterm_then_resume(gsm8k, tmp_path):
    """From the round-4 review of the Ray engine: A ``ray start`` head recorded in
    RAY_TMPDIR/ray/ray_current_cluster but gone: the CLI starts
    its own Ray, as the help says (ray.init() without an address joined the recorded head and
    waited for it without end). SIGTERM mid-scan then ends it as the CLI ends a run: "terminated",
    exit 143 (ray.init had replaced the CLI's handler: exit 15 after Ray's C++ stack dump). The
    saved shards are taken on resume, and the result is the local engine's."""
    import signal
    import subprocess
    import sys
    import time
    texts, _ = gsm8k
    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    folder = tmp_path / "corpus"
    folder.mkdir()
    for k in range(6):          # 6 shards of 22,419 rows: the scan takes many seconds on 2 CPUs
        (folder / f"part-{k}.jsonl").write_text(jsonl(rows * 3), encoding="utf-8")
    shard_dir = tmp_path / "shards"
    short = tempfile.mkdtemp(prefix="r4ray")        # Ray's socket paths must stay short
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "RAY_TMPDIR": short, "RAY_ADDRESS": "",
           "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    try:
        os.makedirs(os.path.join(short, "ray"))
        with open(os.path.join(short, "ray", "ray_current_cluster"), "w", encoding="utf-8") as handle:
            handle.write("127.0.0.1:1")             # nothing listens on port 1
        proc = subprocess.Popen([sys.executable, "-m", "auditor", "contamination", str(folder), "--benchmark", "gsm8k",
                                 "--engine", "ray", "--shard-dir", str(shard_dir), "--json", str(tmp_path / "s.json"),
                                 "--quiet"], env=env, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(1200):                   # the shard folder is made once Ray has started
                if shard_dir.exists() or proc.poll() is not None:
                    break
                time.sleep(0.1)
            assert shard_dir.exists(), "the run never started its Ray"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert proc.returncode == 143, err[-2000:]
    assert err.strip().splitlines()[-1] == "terminated" and "SIGTERM received" not in err
    assert not [p for p in shard_dir.iterdir() if p.name.startswith(".")]       # no temporary file left
    saved = len(list(shard_dir.iterdir()))
    resumed = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert resumed.engine["shards_resumed"] == saved < 6
    per_shard = len(rows) * 3
    assert found(resumed)[42] == [5000 + k * len(rows) for k in range(18)]     # 6 shards x 3 copies
    assert resumed.corpus_records == 6 * per_shard
    assert without_engine(resumed.summary()) == contamination(str(folder), "gsm8k").summary()
