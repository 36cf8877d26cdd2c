"""Resume caches are input too: a per-shard result in --shard-dir is used only when this run's code
wrote it for these inputs and settings. Forged files (the hostile review's: a contamination shard
claiming 75 of 100 items, a leak shard hiding every leak, ``"result": {}``), a file copied from
another run, one linked to /dev/zero or 439 MB large, are not used: the shard is scanned again and
the report is the one a run without the folder gives."""
from __future__ import annotations

import json
import os

import pytest

ray = pytest.importorskip("ray")

import real_data  # noqa: E402
from auditor.contamination import contamination  # noqa: E402
from auditor.io import resume  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.leakage import LeakSettings, RoleNames, leak  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: one local Ray for the module)

SETTINGS = LeakSettings(roles_a=RoleNames(text="question", answer="answer"))


@pytest.fixture(autouse=True)
def own_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDITOR_RESUME_SECRET", str(tmp_path / "secret" / "resume-secret"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """GSM8K train in 3 shards, 12 GSM8K test questions planted in the second; the test split's first
    100 questions as B and as the benchmark."""
    train = real_data.rows("gsm8k/train.jsonl")[:3000]
    test = real_data.rows("gsm8k/test.jsonl")[:100]
    train[1500:1512] = test[:12]
    folder = tmp_path_factory.mktemp("resume") / "train"
    folder.mkdir()
    for k in range(3):
        (folder / f"part-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train[k * 1000:(k + 1) * 1000]))
    bench = folder.parent / "test.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in test))
    return folder, bench


def _without_engine(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "engine"}


def _contamination(folder, bench, shard_dir):
    return ray_contamination(str(folder), str(bench), corpus_text="question", benchmark_text="question", quiet=True,
                             shard_dir=shard_dir)


def _forge_everything(shard_dir, make):
    for path in sorted(shard_dir.iterdir()):
        path.write_text(make(path))


@pytest.mark.slow
def test_forged_contamination_shards_are_scanned_again(corpus, tmp_path):
    folder, bench = corpus
    honest = contamination(str(folder / "part-*.jsonl"), str(bench), corpus_text="question",
                           benchmark_text="question").summary()
    shard_dir = tmp_path / "shards"
    first = _contamination(folder, bench, shard_dir)
    assert len(first.items) == 12 and first.engine["shards_resumed"] == 0
    saved = {p.name: p.read_text() for p in shard_dir.iterdir()}
    assert len(saved) == 3
    assert _contamination(folder, bench, shard_dir).engine["shards_resumed"] == 3      # honest files are used
    # the previous format, with the identity copied and 75 items claimed
    def old_format(path):
        body = json.loads(saved[path.name].partition("\n")[2])
        hits = {"windows": {str(i): [0] for i in range(75)}, "rows": {str(i): [1, [0], 0] for i in range(75)}}
        return json.dumps({**body["shard"], "records": 1000, "tokens": 1, "no_words": 0, "hits": hits, "matched": []})
    # the new format, its payload edited, the MAC left as it was (or recomputed with a guessed secret)
    def edited(path):
        mac, _, body = saved[path.name].partition("\n")
        data = json.loads(body)
        data["payload"]["hits"] = {"windows": {"0": [0]}, "rows": {"0": [1, [0], 0]}}     # one item more
        return mac + "\n" + json.dumps(data, sort_keys=True)
    for make in (old_format, edited, lambda path: json.dumps({"result": {}})):
        _forge_everything(shard_dir, make)
        again = _contamination(folder, bench, shard_dir)
        assert again.engine["shards_resumed"] == 0
        assert _without_engine(again.summary())["items"] == honest["items"]


@pytest.mark.slow
def test_forged_leak_shards_cannot_hide_leaks(corpus, tmp_path):
    folder, bench = corpus
    local = leak(str(folder / "part-*.jsonl"), str(bench), settings=SETTINGS)
    assert len(local.text_leak_rows) == 12
    shard_dir = tmp_path / "shards"
    ray_leak(str(folder), str(bench), settings=SETTINGS, quiet=True, shard_dir=shard_dir)
    saved = {p.name: p.read_text() for p in shard_dir.iterdir()}
    no_leaks = {"matches": {}, "counts": {}, "records": 1000}
    forgeries = (
        lambda path: json.dumps({**json.loads(saved[path.name].partition("\n")[2])["shard"], "result": no_leaks}),
        lambda path: json.dumps({"result": {}}),                                    # a KeyError traceback before
        lambda path: saved[path.name].partition("\n")[0] + "\n" + json.dumps(
            {**json.loads(saved[path.name].partition("\n")[2]), "payload": {"result": no_leaks}}, sort_keys=True),
    )
    for make in forgeries:
        _forge_everything(shard_dir, make)
        again = ray_leak(str(folder), str(bench), settings=SETTINGS, quiet=True, shard_dir=shard_dir)
        assert again.engine["shards_resumed"] == 0
        assert again.text_leak_rows == local.text_leak_rows


@pytest.mark.slow
def test_a_file_from_another_run_or_other_code_is_not_used(corpus, tmp_path, monkeypatch):
    folder, bench = corpus
    shard_dir = tmp_path / "shards"
    first = _contamination(folder, bench, shard_dir)
    # another benchmark's results renamed to this run's key: the key inside them tells
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in real_data.rows("gsm8k/test.jsonl")[100:200]))
    other_dir = tmp_path / "other_shards"
    ray_contamination(str(folder), str(other), corpus_text="question", benchmark_text="question", quiet=True,
                      shard_dir=other_dir)
    key = next(shard_dir.iterdir()).name.split("-")[1]
    for path in sorted(other_dir.iterdir()):
        k = path.name.rsplit("-", 1)[1]
        (shard_dir / f"contamination-{key}-{k}").write_text(path.read_text())
    again = _contamination(folder, bench, shard_dir)
    assert again.engine["shards_resumed"] == 0 and again.items == first.items
    # results written by other code (another version) are not used either
    monkeypatch.setattr(resume, "code_version", lambda: "another-version")
    assert _contamination(folder, bench, shard_dir).engine["shards_resumed"] == 0


def test_a_saved_result_is_read_within_a_size_bound_and_never_through_a_link(tmp_path):
    os.environ["AUDITOR_RESUME_SECRET"] = str(tmp_path / "secret")
    identity = {"shard": "part-0.jsonl", "size": 10}
    good = tmp_path / "good.json"
    good.write_text(resume.dump("KEY", identity, {"result": {"a": 1}}))
    assert resume.load(good, "KEY", identity) == {"result": {"a": 1}}
    assert resume.load(good, "OTHER", identity) is None
    assert resume.load(good, "KEY", {**identity, "size": 11}) is None
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    assert resume.load(link, "KEY", identity) is None                 # read whole before: killed for memory
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:                                   # sparse: 439 MB that cost no disk
        handle.truncate(439 * 2 ** 20)
    assert resume.load(huge, "KEY", identity) is None
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert resume.load(fifo, "KEY", identity) is None                  # never waits on a pipe
    # a secret others can read signs nothing: nothing is resumed
    os.chmod(tmp_path / "secret", 0o644)
    assert resume.secret() is None and resume.load(good, "KEY", identity) is None
