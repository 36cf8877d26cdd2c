"""The Ray engine against the local engine on every codec, on odd split folders, and the CLI's
outputs byte for byte (summary.json but for its engine block)."""
from __future__ import annotations

import bz2
import gzip
import json
import lzma
import pytest
ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
from auditor.contamination import contamination, tokenize  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: the shared local Ray)


PLANTED = {0: 3, 7: 410, 42: 1333}       # GSM8K test row -> the corpus row it is planted at
ARROW_CODECS = {".zst": "zstd", ".lz4": "lz4", ".br": "brotli"}




def read_jsonl(path, field):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line)[field] for line in handle if line.strip()]


def write_compressed(path, data: bytes) -> None:
    suffix = path.suffix
    if suffix in ARROW_CODECS:
        with pa.output_stream(str(path), compression=ARROW_CODECS[suffix]) as handle:
            handle.write(data)
    else:
        path.write_bytes({".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
                          ".jsonl": bytes}[suffix](data))


@pytest.fixture(scope="module")
def codec_corpus(real_data, tmp_path_factory):
    """GSM8K train answers with three GSM8K test questions planted, as six shards, one per codec,
    with CRLF line ends, blank lines and a BOM in the first shard."""
    texts = read_jsonl(real_data / "gsm8k/train.jsonl", "answer")[:1800]
    questions = read_jsonl(real_data / "gsm8k/test.jsonl", "question")
    for item, row in PLANTED.items():
        texts[row] = questions[item]
    folder = tmp_path_factory.mktemp("codecs") / "corpus"
    folder.mkdir()
    for k, suffix in enumerate((".gz", ".bz2", ".xz", ".zst", ".lz4", ".br")):
        part = texts[k * 300:(k + 1) * 300]
        lines = [json.dumps({"id": i, "text": t}, ensure_ascii=k % 2 == 0) for i, t in enumerate(part)]
        data = ("\r\n".join(lines[:150]) + "\r\n\r\n" + "\n".join(lines[150:])).encode()
        write_compressed(folder / f"part-{k}.jsonl{suffix}", (b"\xef\xbb\xbf" if k == 0 else b"") + data)
    return folder, texts


def write_split_folder(root, names, rows_by_name):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"text": t} for t in rows_by_name[name]]
        if name.endswith(".parquet"):
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.sweep
def test_every_codec_through_ray_equals_local(codec_corpus):
    """From the review of the streaming JSONL reader."""
    folder, texts = codec_corpus
    on_ray = ray_contamination(str(folder), "gsm8k", quiet=True).summary()
    assert on_ray.pop("engine")["shards"] == 6
    assert on_ray == contamination(str(folder), "gsm8k").summary()
    assert on_ray["corpus"]["tokens"] == sum(len(tokenize(t)) for t in texts)


@pytest.mark.slow
def test_odd_folders_choose_the_same_files_on_both_engines(real_data, tmp_path):
    """From the review of the streaming JSONL reader: The split each engine reads, against the files the
    folder was built from: only test and
    another name (the other name, not test), nested train files in two folders, a glob, hub-style
    data/train-*.parquet reached through a file:// URI (Ray) and the folder (local)."""
    questions = read_jsonl(real_data / "gsm8k/test.jsonl", "question")
    answers = read_jsonl(real_data / "gsm8k/train.jsonl", "answer")
    cases = [
        (["test.jsonl", "other.jsonl"], "", {"test.jsonl": questions[:60], "other.jsonl": answers[:40]},
         "other", ["other.jsonl"], "other, test"),
        (["a/train.jsonl", "b/train.jsonl", "a/test.jsonl"], "",
         {"a/train.jsonl": answers[:30], "b/train.jsonl": answers[30:50], "a/test.jsonl": questions[:60]},
         "train", ["a/train.jsonl", "b/train.jsonl"], "test, train"),
        (["train.jsonl", "test.jsonl"], "/*.jsonl", {"train.jsonl": answers[:25], "test.jsonl": questions[:60]},
         "train", ["train.jsonl"], "test, train"),
        (["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet",
          "data/test-00000-of-00001.parquet"], "",
         {"data/train-00000-of-00002.parquet": answers[:20], "data/train-00001-of-00002.parquet": answers[20:45],
          "data/test-00000-of-00001.parquet": questions[:60]}, "train",
         ["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"], "test, train"),
    ]
    for k, (names, glob, rows, split, chosen, available) in enumerate(cases):
        root = tmp_path / f"case{k}"
        write_split_folder(root, names, rows)
        texts = [t for name in chosen for t in rows[name]]
        local = contamination(str(root) + glob, "gsm8k")
        uri = ("file://" if "parquet" in names[0] else "") + str(root) + glob
        on_ray = ray_contamination(uri, "gsm8k", quiet=True)
        summary = on_ray.summary()
        summary.pop("engine")
        expected = local.summary()
        assert summary == expected, names
        assert expected["corpus"]["records"] == len(texts) and expected["corpus"]["split"] == split, names
        assert expected["corpus"]["tokens"] == sum(len(tokenize(t)) for t in texts), names
        assert expected["items"] == contamination(texts, "gsm8k").summary()["items"], names
        assert expected["corpus"]["notices"] == [f"split not given: using '{split}' (available: {available})"]


@pytest.mark.slow
def test_a_missing_split_is_refused_by_both_engines_and_the_cli(real_data, tmp_path, run_cli):
    """From the review of the streaming JSONL reader."""
    folder = tmp_path / "ds"
    write_split_folder(folder, ["train.jsonl", "test.jsonl"],
                       {"train.jsonl": ["one two three four"], "test.jsonl": ["five six seven eight"]})
    for run in (lambda: contamination(str(folder), "gsm8k", corpus_split="validation"),
                lambda: ray_contamination(str(folder), "gsm8k", corpus_split="validation", quiet=True)):
        with pytest.raises(AuditorError) as caught:
            run()
        assert caught.value.code == "bad_split" and "'validation'" in caught.value.message
        assert caught.value.hint == "Available splits: test, train."
    address = ray.get_runtime_context().gcs_address
    for engine in (["--engine", "ray", "--ray-address", address], []):
        code, out, err = run_cli("contamination", str(folder), "--benchmark", "gsm8k", "--split", "validation",
                                 "--quiet", *engine)
        assert code == 2 and "no split 'validation'" in err and "Traceback" not in err, err


@pytest.mark.sweep
def test_cli_outputs_are_the_same_bytes_on_both_engines(real_data, tmp_path, run_cli):
    """From the review of the streaming JSONL reader: REPORT.md byte for byte, summary.json but for its
    engine block, from a folder of split
    shards with a GSM8K test question planted in train (found) and the test split (not read)."""
    questions = read_jsonl(real_data / "gsm8k/test.jsonl", "question")
    answers = read_jsonl(real_data / "gsm8k/train.jsonl", "answer")
    train = answers[:300]
    train[123] = questions[9]
    folder = tmp_path / "ds"
    write_split_folder(folder, ["train-00000-of-00002.jsonl", "train-00001-of-00002.jsonl", "test.jsonl"],
                       {"train-00000-of-00002.jsonl": train[:200], "train-00001-of-00002.jsonl": train[200:],
                        "test.jsonl": questions[:100]})
    address = ray.get_runtime_context().gcs_address
    outs = {}
    for name, engine in (("local", []), ("ray", ["--engine", "ray", "--ray-address", address])):
        out_dir = tmp_path / f"out-{name}"
        code, _, err = run_cli("contamination", str(folder), "--benchmark", "gsm8k", "--out-dir", str(out_dir),
                               "--quiet", *engine)
        assert code == 0, err
        outs[name] = out_dir
    assert (outs["local"] / "REPORT.md").read_bytes() == (outs["ray"] / "REPORT.md").read_bytes()
    local = json.loads((outs["local"] / "summary.json").read_text(encoding="utf-8"))
    on_ray = json.loads((outs["ray"] / "summary.json").read_text(encoding="utf-8"))
    assert on_ray.pop("engine")["shards"] == 2 and on_ray == local
    assert local["corpus"]["records"] == 300 and local["corpus"]["split"] == "train"
    found = {it["benchmark_row"]: it["corpus_rows"] for it in local["items"]}
    assert 123 in found[9] and len(found) < 10
