"""``contamination --engine ray`` against the local engine and against planted ground truth, on real
data split into shards of uneven size and kind (JSONL, an empty shard, gzip, Parquet), plus: a
corrupt shard, a worker that dies once, and a run interrupted and resumed from its shard folder.

One local Ray (2 CPUs) serves the whole module; ``ray_session`` joins it and leaves it running.
"""
from __future__ import annotations

import gzip
import json
import os

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor.contamination import contamination  # noqa: E402
from auditor.distributed import contamination as ray_engine  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: the shared local Ray)

PLANTED = {0: 3, 5: 1200, 17: 2701, 42: 2950}     # GSM8K test row -> the corpus row it is planted at




@pytest.fixture(scope="module")
def corpus(real_data, tmp_path_factory):
    """GSM8K train answers and HumanEval prompts, with four GSM8K test questions planted at known
    rows, as five shards: 1,200 rows of JSONL, an empty file, 1,500 rows gzip'd, 350 rows of
    Parquet (with a null text) and the rest (114 rows) as JSONL."""
    def read(rel, field):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line)[field] for line in handle if line.strip()]
    texts = read("gsm8k/train.jsonl", "answer")[:3000] + read("humaneval/HumanEval.jsonl", "prompt")
    test_questions = read("gsm8k/test.jsonl", "question")
    for item, row in PLANTED.items():
        texts[row] = test_questions[item]
    texts[2800] = None
    rows = [{"id": i, "text": t} for i, t in enumerate(texts)]
    folder = tmp_path_factory.mktemp("ray_corpus") / "corpus"
    folder.mkdir()
    (folder / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:1200]), encoding="utf-8")
    (folder / "part-1.jsonl").write_text("", encoding="utf-8")
    with gzip.open(folder / "part-2.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows[1200:2700])
    pq.write_table(pa.Table.from_pylist(rows[2700:3050]), folder / "part-3.parquet")
    (folder / "part-4.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[3050:]), encoding="utf-8")
    return folder, texts, test_questions


def without_engine(summary: dict) -> dict:
    summary = dict(summary)
    summary.pop("engine")
    return summary


def test_ray_equals_local_and_finds_the_planted_items(corpus):
    folder, texts, _ = corpus
    local = contamination(texts, "gsm8k").summary()
    on_ray = ray_contamination(str(folder), "gsm8k", quiet=True).summary()
    engine = on_ray["engine"]
    assert engine["name"] == "ray" and engine["shards"] == 5 and engine["shards_resumed"] == 0
    on_ray = without_engine(on_ray)
    # Local over the same texts as one list: the same items, rows and counts (the source differs).
    assert on_ray["items"] == local["items"]
    assert on_ray["corpus"]["records"] == len(texts) and on_ray["corpus"]["tokens"] == local["corpus"]["tokens"]
    found = {it["benchmark_row"]: it for it in on_ray["items"]}
    for item, row in PLANTED.items():        # ground truth: each planted question, at its row
        assert row in found[item]["corpus_rows"]
        assert found[item]["matched_ngrams"] == found[item]["item_ngrams"]
    # And against the local engine reading the same folder: summary.json identical but the engine block.
    assert on_ray == contamination(str(folder), "gsm8k").summary()


def test_humaneval_prompts_found_at_their_rows(corpus):
    folder, texts, _ = corpus
    result = ray_contamination(str(folder), "humaneval", quiet=True)
    assert len(result.items) == 164
    first_prompt_row = 3000
    assert all(first_prompt_row + it["benchmark_row"] in it["corpus_rows"] for it in result.items)
    assert without_engine(result.summary()) == contamination(str(folder), "humaneval").summary()


def test_records_without_text_are_counted_and_stated(corpus, tmp_path):
    """Records with no word to check (a null, a row without the field, "", only punctuation, and a
    whole Parquet shard with other columns) are counted in summary.json and stated in REPORT.md, by
    both engines alike."""
    folder, texts, _ = corpus
    mixed = tmp_path / "corpus"
    mixed.mkdir()
    for path in folder.iterdir():
        (mixed / path.name).write_bytes(path.read_bytes())
    extra = [{"text": ""}, {"id": 7}, {"text": "Natalia sold clips to 48 of her friends in April"}, {"text": " ?! "}]
    (mixed / "part-5.jsonl").write_text("".join(json.dumps(r) + "\n" for r in extra), encoding="utf-8")
    pq.write_table(pa.table({"body": ["What is 2 + 2?", "Name a prime."]}), mixed / "part-6.parquet")
    wordless = (lambda t: not t or not any(c.isalnum() for c in t))     # the definition: no word survives
    expected = sum(map(wordless, texts)) + sum(wordless(r.get("text")) for r in extra) + 2
    assert expected == 6
    local = contamination(str(mixed), "gsm8k")
    on_ray = ray_contamination(str(mixed), "gsm8k", quiet=True)
    assert local.summary()["corpus"]["no_words"] == expected
    assert local.summary()["corpus"]["records"] == len(texts) + len(extra) + 2
    assert without_engine(on_ray.summary()) == local.summary()
    assert (f"**{expected:,} of the corpus's {len(texts) + len(extra) + 2:,} records have no words to check**"
            in on_ray.markdown())
    # A corpus whose every record has a word says nothing of it.
    full = contamination([t or "x" for t in texts], "gsm8k")
    assert full.summary()["corpus"]["no_words"] == 0 and "no words to check" not in full.markdown()


def test_a_corrupt_shard_is_named(corpus, tmp_path):
    folder, _, _ = corpus
    bad = tmp_path / "corpus"
    bad.mkdir()
    for path in folder.iterdir():
        (bad / path.name).write_bytes(path.read_bytes())
    data = (bad / "part-2.jsonl.gz").read_bytes()
    (bad / "part-2.jsonl.gz").write_bytes(data[: len(data) // 2])      # a truncated download
    with pytest.raises(AuditorError) as caught:
        ray_contamination(str(bad), "gsm8k", quiet=True)
    assert caught.value.code == "bad_format"
    assert "part-2.jsonl.gz" in caught.value.message


def test_a_dying_worker_is_retried_with_the_same_result(corpus, tmp_path, monkeypatch):
    folder, texts, _ = corpus
    marker = tmp_path / "died-once"
    monkeypatch.setenv(ray_engine.FAIL_ONCE_ENV, str(marker))
    result = ray_contamination(str(folder), "gsm8k", quiet=True)
    assert marker.exists()                   # a worker did exit mid-task
    assert result.items == contamination(texts, "gsm8k").items


def test_an_interrupted_run_resumes_from_its_shard_folder(corpus, tmp_path, monkeypatch):
    folder, _, _ = corpus
    shard_dir = tmp_path / "shards"
    monkeypatch.setenv(ray_engine.STOP_AFTER_ENV, "2")
    with pytest.raises(KeyboardInterrupt):
        ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir)
    saved = sorted(p.name for p in shard_dir.iterdir())
    assert len(saved) == 2 and not [p for p in shard_dir.iterdir() if p.name.startswith(".")]
    monkeypatch.delenv(ray_engine.STOP_AFTER_ENV)
    resumed = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir).summary()
    assert resumed["engine"]["shards_resumed"] == 2
    assert len(list(shard_dir.iterdir())) == 5
    assert without_engine(resumed) == contamination(str(folder), "gsm8k").summary()
    # A shard replaced since is not taken from the folder: the result follows the new content.
    (folder / "part-1.jsonl").write_text(json.dumps({"id": -1, "text": corpus[2][7]}) + "\n", encoding="utf-8")
    try:
        again = ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=shard_dir).summary()
        assert again["engine"]["shards_resumed"] == 4
        assert 1200 in next(it for it in again["items"] if it["benchmark_row"] == 7)["corpus_rows"]
    finally:
        (folder / "part-1.jsonl").write_text("", encoding="utf-8")


def test_saved_results_are_reused_only_for_the_same_unchanged_file(corpus, tmp_path):
    """A shard of the same name and size is not taken from the shard folder when it is another
    file (another corpus) or was rewritten since (same size, new modification time)."""
    _, _, test_questions = corpus
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    planted = "".join(json.dumps({"text": q}) + "\n" for q in test_questions[:6]).encode()
    line = json.dumps({"text": ""}).encode() + b"\n"
    filler = json.dumps({"text": "y" * (len(planted) - len(line))}).encode() + b"\n"
    assert len(filler) == len(planted)
    (first / "part-0.jsonl").write_bytes(filler)
    (second / "part-0.jsonl").write_bytes(planted)
    shard_dir = tmp_path / "shards"
    assert ray_contamination(str(first), "gsm8k", quiet=True, shard_dir=shard_dir).items == []
    on_second = ray_contamination(str(second), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert on_second.engine["shards_resumed"] == 0
    assert on_second.items == contamination(str(second), "gsm8k").items and len(on_second.items) == 6
    # The first corpus's shard rewritten in place with the planted text: same name, size and folder.
    (first / "part-0.jsonl").write_bytes(planted)
    os.utime(first / "part-0.jsonl", ns=(10**18, 10**18))
    again = ray_contamination(str(first), "gsm8k", quiet=True, shard_dir=shard_dir)
    assert again.engine["shards_resumed"] == 0 and again.items == on_second.items
    assert ray_contamination(str(first), "gsm8k", quiet=True, shard_dir=shard_dir).engine["shards_resumed"] == 1


@pytest.mark.slow
def test_a_folder_of_splits_is_read_as_its_train_split_by_both_engines(real_data, tmp_path, run_cli):
    """A dataset folder holding train and test files is not one corpus: read whole, GSM8K's own test
    split made every GSM8K test item look contaminated. Both engines read the train split (as
    ``scan`` does) and say so, or the split asked for; the counts are the files' own."""
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    counts = {}
    for split in ("train", "test"):
        lines = (real_data / "gsm8k" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        counts[split] = len(lines)
        half = len(lines) // 2          # as shards: train-00000-of-00002.jsonl, ...
        for k, part in enumerate((lines[:half], lines[half:])):
            (folder / f"{split}-{k:05d}-of-00002.jsonl").write_text("\n".join(part) + "\n", encoding="utf-8")
    local = contamination(str(folder), "gsm8k", corpus_text="question")
    on_ray = ray_contamination(str(folder), "gsm8k", corpus_text="question", quiet=True)
    assert without_engine(on_ray.summary()) == local.summary()
    corpus_info = local.summary()["corpus"]
    assert corpus_info["records"] == counts["train"] and corpus_info["split"] == "train"
    assert corpus_info["notices"] == ["split not given: using 'train' (available: test, train)"]
    assert len(local.items) < counts["test"] // 10          # not the test split finding itself
    assert "> Note (corpus): split not given: using 'train'" in on_ray.markdown() == local.markdown()
    # The split asked for, by both engines (and the CLI): GSM8K test is all in its own test split.
    test_local = contamination(str(folder), "gsm8k", corpus_split="test", corpus_text="question")
    test_ray = ray_contamination(str(folder), "gsm8k", corpus_split="test", corpus_text="question", quiet=True)
    assert without_engine(test_ray.summary()) == test_local.summary()
    assert len(test_local.items) + len(test_local.too_short) == counts["test"]
    assert test_local.summary()["corpus"]["split"] == "test" and "notices" not in test_local.summary()["corpus"]
    code, out, err = run_cli("contamination", str(folder), "--benchmark", "gsm8k", "--split", "test", "--text",
                             "question", "--engine", "ray", "--ray-address", ray.get_runtime_context().gcs_address,
                             "--json", "-", "--quiet")
    assert code == 0 and json.loads(out)["corpus"]["records"] == counts["test"], err
    with pytest.raises(AuditorError) as caught:
        ray_contamination(str(folder), "gsm8k", corpus_split="validation", quiet=True)
    assert caught.value.code == "bad_split" and "test, train" in caught.value.hint


@pytest.mark.parametrize("layout", [
    {"default/train/0000.parquet": ("train", 0, 300), "default/train/0001.parquet": ("train", 300, 500),
     "default/test/0000.parquet": ("test", 0, 200)},                   # the Hub's converted Parquet
    {"train-0.jsonl": ("train", 0, 250), "train-1.jsonl": ("train", 250, 500), "test-0.jsonl": ("test", 0, 200)},
    {"Train.jsonl": ("train", 0, 500), "Test.jsonl": ("test", 0, 200)},
    {"data/train/part_1.jsonl": ("train", 0, 500), "data/test/part_1.jsonl": ("test", 0, 200)},
], ids=["split-folders", "short-shard-numbers", "capitalised", "nested-split-folders"])
def test_split_layouts_are_recognised_alike_by_scan_and_both_engines(real_data, tmp_path, layout):
    """Splits named by a folder (the Hub's converted Parquet: default/train/0000.parquet), by short
    shard numbers or in capitals are splits too: scan and both contamination engines read the
    train split's records (counted from the files written) and say so."""
    import auditor
    texts = {}
    for split in ("train", "test"):
        lines = (real_data / "gsm8k" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        texts[split] = [json.loads(line)["question"] for line in lines]
    folder = tmp_path / "dataset"
    for rel, (split, lo, hi) in layout.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"question": t} for t in texts[split][lo:hi]]
        if path.suffix == ".parquet":
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    n_train = sum(hi - lo for split, lo, hi in layout.values() if split == "train")
    note = "split not given: using 'train' (available: test, train)"
    scanned = auditor.scan(str(folder)).summary()["input"]
    assert scanned["records"] == n_train and scanned["split"] == "train" and scanned["notices"] == [note]
    local = contamination(str(folder), "gsm8k")
    on_ray = ray_contamination(str(folder), "gsm8k", quiet=True)
    assert local.summary()["corpus"]["records"] == n_train and local.summary()["corpus"]["notices"] == [note]
    assert without_engine(on_ray.summary()) == local.summary()
    tested = ray_contamination(str(folder), "gsm8k", corpus_split="test", quiet=True)
    assert without_engine(tested.summary()) == contamination(str(folder), "gsm8k", corpus_split="test").summary()
    assert tested.summary()["corpus"]["records"] == 200


def test_hidden_files_and_folders_are_not_shards_as_locally(tmp_path):
    """Checkpoint copies (.ipynb_checkpoints/), .git and dot-files are skipped by both engines, even
    when the corpus itself sits in a hidden folder."""
    from auditor.io.shards import list_shards
    from auditor.io.listing import expand_local
    folder = tmp_path / ".cache" / "corpus"
    for rel in ("a.jsonl", "sub/b.jsonl", ".ipynb_checkpoints/a-checkpoint.jsonl", "sub/.git/x.jsonl",
                ".hidden.jsonl", "sub/.c.jsonl"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps({"text": rel}) + "\n", encoding="utf-8")
    _, shards = list_shards(str(folder))
    assert [s.name for s in shards] == ["a.jsonl", "sub/b.jsonl"]
    assert [p.relative_to(folder).as_posix() for p in expand_local(str(folder))] == ["a.jsonl", "sub/b.jsonl"]


@pytest.mark.slow
def test_cli_engine_ray_joins_a_running_cluster(corpus, tmp_path, run_cli):
    """The CLI joins this module's Ray by address (--ray-address), as it would a cluster's head."""
    folder, _, _ = corpus
    address = ray.get_runtime_context().gcs_address
    code, out, err = run_cli("contamination", folder, "--benchmark", "gsm8k", "--engine", "ray",
                             "--ray-address", address, "--json", "-", "--quiet", "--shard-dir", tmp_path / "s",
                             timeout=300)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["engine"]["name"] == "ray"
    assert without_engine(summary) == contamination(str(folder), "gsm8k").summary()
    code, out, err = run_cli("contamination", folder, "--benchmark", "gsm8k", "--engine", "ray", "--max-rows", "5")
    assert code == 2 and "--max-rows" in err and "Traceback" not in err


@pytest.mark.sweep
def test_a_wrong_ray_address_is_a_clear_error_in_bounded_time(corpus, run_cli):
    """Nothing listening, an unknown host, not an address, and a port that accepts connections
    but is no Ray head (Ray itself would wait without end): each a usage error naming the address,
    the last within AUDITOR_RAY_JOIN_SECONDS."""
    import socket
    import threading
    import time
    folder, _, _ = corpus
    args = ("contamination", folder, "--benchmark", "gsm8k", "--engine", "ray", "--quiet", "--ray-address")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        free_port = closed.getsockname()[1]         # bound, never listening: connections are refused
        for address, said in ((f"127.0.0.1:{free_port}", "Nothing answers at the Ray address"),
                              ("no-such-host.invalid:6379", "Nothing answers at the Ray address"),
                              ("head-without-port", "is not HOST:PORT"), ("localhost:²", "is not HOST:PORT"),
                              ("localhost:٦٣٧٩", "is not HOST:PORT")):
            code, _, err = run_cli(*args, address, timeout=120)
            assert code == 2 and said in err and address in err and "Traceback" not in err, err
    silent = socket.socket()                        # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    accepted = []
    threading.Thread(target=lambda: [accepted.append(silent.accept()) for _ in range(16)], daemon=True).start()
    try:
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        code, out, err = run_cli(*args, address, "--json", "-", env={"AUDITOR_RAY_JOIN_SECONDS": "4"}, timeout=120)
        assert code == 2 and time.monotonic() - start < 90, err
        assert json.loads(out)["error"]["message"].startswith(f"Joining the Ray cluster at '{address}' took more than 4 s")
        assert "AUDITOR_RAY_JOIN_SECONDS" in err and "Traceback" not in err
        # Ctrl-C while Ray waits ends the run at once, not when the wait is over.
        import os
        import signal
        import subprocess
        import sys
        from conftest import REPO
        env = {**os.environ, "AUDITOR_RAY_JOIN_SECONDS": "600", "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-m", "auditor", *map(str, args), address], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while len(accepted) < 2 and proc.poll() is None:       # Ray is connecting (the probe was the first)
                time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) != 0
        finally:
            proc.kill()
    finally:
        silent.close()


# --------------------------------------------------------------------------- --decontaminate on Ray

def read_lines(path) -> list:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_ray_decontaminate_copies_each_shard_as_the_local_engine_copies_the_corpus(corpus, tmp_path):
    """One JSONL file per shard (the empty shard an empty file), together the local engine's copy
    of the whole folder, row for row; the manifest's rows are the local ones, and the planted rows
    are among them. Resumed from a shard folder (the matching rows saved with each shard), the
    copy is the same."""
    from auditor.decontaminate import decontaminate
    from auditor.distributed.decontaminate import ray_decontaminate
    folder, texts, _ = corpus
    local = decontaminate(str(folder), "gsm8k", tmp_path / "local.jsonl")
    assert set(PLANTED.values()) <= set(local.dropped_rows.tolist())
    # A plain scan's saved shards (no rows listed: they would grow with the contaminated records)
    # are not taken for a copy's.
    ray_contamination(str(folder), "gsm8k", quiet=True, shard_dir=tmp_path / "shards")
    for run_number in range(2):
        out = tmp_path / f"ray-{run_number}"
        made = ray_decontaminate(str(folder), "gsm8k", out, quiet=True, shard_dir=tmp_path / "shards")
        assert made.contamination.engine["shards_resumed"] == (5 if run_number else 0)
        assert sorted(p.name for p in out.iterdir()) == [f"part-{k}.jsonl" for k in range(5)]
        copied = [r for k in range(5) for r in read_lines(out / f"part-{k}.jsonl")]
        assert copied == read_lines(tmp_path / "local.jsonl")
        # byte for byte too, though the folder mixes formats: JSONL shards' lines as written on both
        # engines, the others' records as read
        assert b"".join((out / f"part-{k}.jsonl").read_bytes() for k in range(5)) == \
            (tmp_path / "local.jsonl").read_bytes()
        assert made.dropped_rows.tolist() == local.dropped_rows.tolist()
        manifest = json.loads((tmp_path / f"ray-{run_number}.dropped.json").read_text(encoding="utf-8"))
        assert manifest["dropped_rows"] == local.dropped_rows.tolist()
        assert [f["records"] for f in manifest["files"]] == [1200, 0, 1500, 350, len(texts) - 3050]
        assert made.contamination.items == local.contamination.items
        # A JSONL shard's copy is its own lines, byte for byte, less the dropped ones.
        dropped = set(made.dropped_rows.tolist())
        source = (folder / "part-0.jsonl").read_bytes().splitlines(keepends=True)
        assert (out / "part-0.jsonl").read_bytes() == b"".join(line for i, line in enumerate(source) if i not in dropped)
    # OUT spelt as a file:// URI is that local folder (not a folder named "file:" here).
    ray_decontaminate(str(folder), "gsm8k", f"file://{tmp_path / 'as-uri'}", quiet=True)
    assert sorted(p.name for p in (tmp_path / "as-uri").iterdir()) == [f"part-{k}.jsonl" for k in range(5)]
    assert (tmp_path / "as-uri.dropped.json").exists()


@pytest.mark.slow
def test_ray_decontaminate_refusals(corpus, tmp_path, run_cli):
    folder, _, _ = corpus
    address = ray.get_runtime_context().gcs_address
    # (a store that cannot be reached, here with no network, is named: tests/engines/test_ray_object_store.py
    # writes copies to one)
    for out, said in [(folder / "copy", "inside"), ("s3://bucket/copy", "'s3://bucket/copy'")]:
        code, _, err = run_cli("contamination", folder, "--benchmark", "gsm8k", "--engine", "ray", "--ray-address",
                               address, "--decontaminate", out, "--quiet", timeout=300)
        assert code == 2 and said in err and "Traceback" not in err, err
    # Two shards that would share a copy's name: refused before any copy is written.
    twins = tmp_path / "twins"
    twins.mkdir()
    (twins / "a.jsonl").write_text(json.dumps({"text": "one record"}) + "\n", encoding="utf-8")
    with gzip.open(twins / "a.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "another record"}) + "\n")
    from auditor.distributed.decontaminate import ray_decontaminate
    # The library call, its manifest elsewhere: the error names the folder as given, not a file in it.
    with pytest.raises(AuditorError, match="inside the input folder") as refused:
        ray_decontaminate(str(folder), "gsm8k", folder / "copy", manifest=tmp_path / "m.json", quiet=True)
    assert "(a folder of copies)" in refused.value.message and "shard.jsonl" not in refused.value.message
    with pytest.raises(AuditorError, match="would both be copied"):
        ray_decontaminate(str(twins), "gsm8k", tmp_path / "twins-out", quiet=True)
    assert not (tmp_path / "twins-out").exists() or not list((tmp_path / "twins-out").iterdir())
