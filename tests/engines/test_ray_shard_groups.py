"""Many small shards on Ray: several shards to a read task (``runtime.shard_groups``), and the
settings a joined cluster's workers read.

A read task costs Ray Data a fixed amount whatever it reads, so a corpus of thousands of tiny files
(one per document, as many hub and crawl dumps are) ran at a fraction of the local engine's speed
with one task per shard. The groups must change nothing but the speed: the same report as the local
engine, shard order kept (row numbers), resume per shard, empty shards included.
"""
from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray")

from auditor.contamination import contamination  # noqa: E402
from auditor.distributed import contamination as ray_engine  # noqa: E402
from auditor.distributed import runtime  # noqa: E402
from auditor.io import shards as shards_io  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: the shared local Ray)




# --------------------------------------------------------------------------- the grouping itself

def check_groups(sizes, cpus, groups):
    """Independent checks: the groups cover every shard once, in order; a group of several shards
    holds at most the target bytes; no two neighbouring groups could have been one."""
    target = max(1, min(runtime.TASK_BYTES, sum(sizes) // (runtime.TASKS_PER_CPU * cpus)))
    flat = [i for g in groups for i in g]
    assert flat == list(range(len(sizes)))
    for g in groups:
        assert len(g) >= 1
        if len(g) > 1:
            assert sum(sizes[i] for i in g) <= target
    for left, right in zip(groups, groups[1:]):
        assert sum(sizes[i] for i in left) + sizes[right.start] > target     # greedy: left was full
    return target


def test_big_shards_keep_a_task_each():
    mb = 2 ** 20
    for sizes in ([62 * mb] * 16, [25 * mb] * 8, [300 * mb, 1, 1, 300 * mb]):
        groups = runtime.shard_groups(sizes, 2)
        check_groups(sizes, 2, groups)
        if sizes[1] > 1:
            assert [len(g) for g in groups] == [1] * len(sizes)
    # two tiny shards between big ones share a task; the big ones stay alone
    assert [list(g) for g in runtime.shard_groups([300 * mb, 1, 1, 300 * mb], 2)] == [[0], [1, 2], [3]]


def test_small_shards_share_tasks_but_every_cpu_gets_several():
    sizes = [1500] * 2491                        # the measured case: 2,491 shards of three records
    for cpus in (1, 2, 8, 64):
        groups = runtime.shard_groups(sizes, cpus)
        check_groups(sizes, cpus, groups)
        # a target of total / (4 x CPUs) gives 4 tasks per CPU (a few more where shards do not divide it)
        assert 4 * cpus <= len(groups) <= 4 * cpus + 4 * cpus // 2 + 1
    # uneven sizes and empty shards
    import random
    rng = random.Random(7)
    sizes = [rng.choice([0, 0, 10, 3000, 50_000, 2 ** 21]) for _ in range(500)]
    check_groups(sizes, 2, runtime.shard_groups(sizes, 2))
    assert runtime.shard_groups([], 2) == []
    # empty shards among others join their neighbours; sizes all 0 (a store that reports none) a task each
    assert [list(g) for g in runtime.shard_groups([0, 0, 5000, 0, 0], 2)] == [[0, 1], [2], [3, 4]]
    assert [list(g) for g in runtime.shard_groups([0, 0, 0], 2)] == [[0], [1], [2]]


# --------------------------------------------------------------------------- on real data

@pytest.fixture(scope="module")
def tiny_shards(real_data, tmp_path_factory):
    """GSM8K train answers in 400 small JSONL shards of 0 to 7 records (every 37th empty), five
    GSM8K test questions planted at known global rows."""
    def read(rel, field):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line)[field] for line in handle if line.strip()]
    texts = read("gsm8k/train.jsonl", "answer")[:1400]
    questions = read("gsm8k/test.jsonl", "question")
    planted = {3: 10, 9: 555, 11: 901, 20: 1234, 33: 1399}     # test row -> corpus row
    for item, row in planted.items():
        texts[row] = questions[item]
    folder = tmp_path_factory.mktemp("tiny") / "corpus"
    folder.mkdir()
    at, k = 0, 0
    while at < len(texts):
        n = 0 if k % 37 == 5 else (k * 7919) % 8
        part = texts[at:at + n]
        (folder / f"doc-{k:04d}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in part),
                                                   encoding="utf-8")
        at, k = at + n, k + 1
    return folder, k, planted


def without_engine(summary: dict) -> dict:
    return {key: value for key, value in summary.items() if key != "engine"}


@pytest.mark.slow
def test_many_small_shards_equal_the_local_engine(tiny_shards, tmp_path):
    folder, n_shards, planted = tiny_shards
    filesystem, shards = shards_io.list_shards(str(folder))
    assert len(shards) == n_shards > 300
    datasource = runtime._datasource_class()(shards, filesystem, "text", 1024)
    assert 8 <= len(datasource.groups) < n_shards / 10         # several shards to a task
    local = contamination(str(folder), "gsm8k").summary()
    found = {item["benchmark_row"]: item["corpus_rows"] for item in local["items"]}
    for item, row in planted.items():
        assert row in found[item]                               # ground truth: the planted rows
    result = ray_contamination(str(folder), "gsm8k", quiet=True).summary()
    assert result["engine"]["shards"] == n_shards
    assert without_engine(result) == local


@pytest.mark.slow
def test_an_interrupted_run_over_grouped_shards_resumes_per_shard(tiny_shards, tmp_path, monkeypatch):
    """Shards are saved one by one as they complete, though several share a task: a run stopped
    after 50 resumes with exactly those 50 and gives the local engine's report."""
    folder, n_shards, _ = tiny_shards
    shard_dir = tmp_path / "shards"
    monkeypatch.setenv(ray_engine.STOP_AFTER_ENV, "50")
    with pytest.raises(KeyboardInterrupt):
        ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert len(list(shard_dir.iterdir())) == 50
    monkeypatch.delenv(ray_engine.STOP_AFTER_ENV)
    resumed = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir).summary()
    assert resumed["engine"]["shards_resumed"] == 50
    assert len(list(shard_dir.iterdir())) == n_shards
    assert without_engine(resumed) == contamination(str(folder), "gsm8k").summary()


def test_a_corrupt_small_shard_is_named(tiny_shards, tmp_path):
    import shutil
    folder, _, _ = tiny_shards
    copy = tmp_path / "corpus"
    shutil.copytree(folder, copy)
    (copy / "doc-0123.jsonl").write_text('{"text": "fine"}\n{"text": broken\n', encoding="utf-8")
    from auditor.errors import AuditorError
    with pytest.raises(AuditorError) as info:
        ray_contamination(str(copy), "gsm8k", quiet=True)
    assert "doc-0123.jsonl" in info.value.message


# --------------------------------------------------------------------------- a joined cluster's workers

@pytest.mark.sweep
def test_the_reading_limit_reaches_a_joined_clusters_workers(real_data, tmp_path, run_cli):
    """The CLI joins this module's Ray by address, as it would a cluster whose workers were started
    by its nodes (not from the user's shell). AUDITOR_MAX_BYTES=8M caps one line at 512 KiB: a
    shard with a 1 MB line must be refused by the worker that reads it, as the local engine refuses
    it (the driver reads only the first shard, to check the text field)."""
    with open(real_data / "gsm8k" / "train.jsonl", encoding="utf-8") as handle:
        answers = [json.loads(line)["answer"] for line in handle][:1200]
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in answers), encoding="utf-8")
    long_text = (" ".join(answers) * 4)[:1_000_000]
    (folder / "b.jsonl").write_text(json.dumps({"text": long_text}) + "\n", encoding="utf-8")
    address = ray.get_runtime_context().gcs_address
    args = ("contamination", folder, "--benchmark", "gsm8k", "--engine", "ray", "--ray-address", address,
            "--quiet", "--json", tmp_path / "out.json")
    code, _, err = run_cli(*args, env={"AUDITOR_MAX_BYTES": "8M"}, timeout=300)
    assert code == 2 and "Traceback" not in err, err
    assert "b.jsonl" in err and "longer than 512 KiB" in err
    assert not (tmp_path / "out.json").exists()
    code, _, err = run_cli("contamination", folder, "--benchmark", "gsm8k", "--quiet", "--json", tmp_path / "l.json",
                           env={"AUDITOR_MAX_BYTES": "8M"})
    assert code == 2 and "longer than 512 KiB" in err             # the local engine, the same limit
    code, _, err = run_cli(*args, timeout=300)                    # the default limit: read
    assert code == 0, err
