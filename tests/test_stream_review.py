"""A hostile review of the reused-buffer JSONL reader (``textstream.text_blocks`` over
``budget.CountedStream.chunk_into``), the word-at-a-time ASCII skip of ``kernels.odd_runs``, and the
split choice of ``contamination`` on both engines. Ground truth is always independent of the code
under test: ``json.loads`` of each line, ``contamination.tokenize`` (the definition) and naive
n-gram sets, the files a folder was built from.

One local Ray (2 CPUs) serves the whole module, as in tests/test_ray_contamination.py.
"""
from __future__ import annotations

import bz2
import gzip
import io
import itertools
import json
import lzma
import random
import re

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor.io import budget, sources
from auditor import textstream, wordtokens
from auditor.contamination import build_index, contamination, scan_batch, tokenize  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402

PLANTED = {0: 3, 7: 410, 42: 1333}       # GSM8K test row -> the corpus row it is planted at
ARROW_CODECS = {".zst": "zstd", ".lz4": "lz4", ".br": "brotli"}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


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


def expected_texts(data: bytes, field="text") -> list:
    """The definition: each non-blank line through json.loads (a leading BOM dropped)."""
    text = data.decode("utf-8").removeprefix("\ufeff")
    return [json.loads(line).get(field) for line in text.split("\n") if line.strip()]


class Trickle(io.RawIOBase):
    """A stream whose reads return at most a few bytes each (a pipe, a slow decompressor)."""

    def __init__(self, data: bytes, sizes):
        self.data, self.pos, self.sizes = data, 0, sizes

    def readable(self):
        return True

    def readinto(self, buf):
        n = min(len(buf), next(self.sizes), len(self.data) - self.pos)
        buf[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def read_all(data: bytes, sizes=None):
    """(every text of the stream's blocks, all blocks kept to the end, the checked stream)."""
    stream = budget.CountedStream(Trickle(data, sizes or itertools.repeat(1 << 30)), budget.Budget(limited=False),
                              "x.jsonl", b"\n")
    blocks = list(textstream.text_blocks(stream, "x.jsonl", "text"))
    texts = [t for block in blocks for t in (block.to_pylist() if hasattr(block, "to_pylist") else block)]
    return texts, stream


# --------------------------------------------------------------------------- the reused buffer


def test_lines_straddling_reads_in_every_way_equal_json_loads(monkeypatch):
    """Random files (CRLF, multi-byte and astral characters, escaped and raw U+2028, blank and
    whitespace-only lines, a BOM, with and without a final newline) read with tiny blocks and
    reads of 1-5 bytes, so every boundary falls everywhere: a CRLF, a UTF-8 character or the BOM
    itself cut by a read, a line many blocks long. Texts equal json.loads; the stream counted every byte."""
    rng = random.Random(7)
    alphabet = ["a", " ", "é", "€", "😀", "\n", '"', "\u2028", "\\"]
    for _ in range(1500):
        lines = []
        for i in range(rng.randint(0, 10)):
            roll = rng.random()
            if roll < 0.1:
                lines.append("")
            elif roll < 0.15:
                lines.append(" \t ")
            else:
                text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
                lines.append(json.dumps({"i": i, "text": text}, ensure_ascii=rng.random() < 0.3))
        end = rng.choice(["\n", "\r\n"])
        data = (end.join(lines) + (end if rng.random() < 0.5 else "")).encode("utf-8")
        data = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + data
        monkeypatch.setattr(textstream, "BLOCK", rng.choice([1, 2, 3, 4, 7, 16, 64]))
        sizes = (rng.randint(1, 5) for _ in itertools.count()) if rng.random() < 0.5 else None
        texts, stream = read_all(data, sizes)
        assert texts == expected_texts(data), data
        assert stream.offset == stream.budget.used == len(data)


@pytest.mark.parametrize("block", [16, 64])
def test_edge_files(monkeypatch, block):
    monkeypatch.setattr(textstream, "BLOCK", block)
    one = json.dumps({"text": "x"})
    exact = json.dumps({"text": "y" * (block - 12)})      # a last line, no newline, of exactly one block
    assert len(exact) == block
    cases = [b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n", b"\n" * 3 * block, b"\r\n" * block,
             exact.encode(), b"\n" * (block - 1) + exact.encode(), (one + "\n").encode() * 3 + exact.encode(),
             (json.dumps({"text": "é" * 5 * block}) + "\r\n").encode(),     # one line of several blocks, CRLF
             (one + "\n" + json.dumps({"text": "z" * 9 * block}) + "\n" + one).encode()]
    for data in cases:
        texts, stream = read_all(data)
        assert texts == expected_texts(data) and stream.offset == len(data), data


def test_a_line_over_the_cap_is_refused_wherever_it_falls(monkeypatch):
    """The per-line cap (1/16 of AUDITOR_MAX_BYTES, at least 64 KiB) holds whether the long line
    is cut by reads or lies whole inside one read (8 MiB reads, far more than the cap): before the
    fix a whole over-long line inside one read was accepted, while the row reader refused it. A
    line of exactly the cap is read."""
    monkeypatch.setenv("AUDITOR_MAX_BYTES", "1M")
    cap = budget.Budget(limited=False).line_cap
    assert cap == 64 * 1024
    head = [json.dumps({"text": "a"}), ""]
    at_cap = json.dumps({"text": "b" * (cap - 12)})
    assert len(at_cap) == cap
    over = json.dumps({"text": "c" * (cap - 11)})
    for block in (1000, 5 * cap, textstream.BLOCK):
        monkeypatch.setattr(textstream, "BLOCK", block)
        data = "\n".join(head + [at_cap, at_cap, ""]).encode()
        assert read_all(data)[0] == expected_texts(data)
        for tail in ("\n" + json.dumps({"text": "d"}) + "\n", ""):
            data = ("\n".join(head + [at_cap, over]) + tail).encode()
            with pytest.raises(AuditorError) as caught:
                read_all(data)
            assert caught.value.code == "too_large" and "x.jsonl, line 4:" in caught.value.message, block


@pytest.mark.parametrize("suffix", [".jsonl", ".gz"])
def test_a_nul_byte_in_a_later_read_is_reported_at_its_file_offset(tmp_path, monkeypatch, suffix):
    """The offset in the message is the byte's offset in the (decompressed) file, not in the
    reused buffer, which at that point starts with the line the last read left unfinished."""
    monkeypatch.setattr(textstream, "BLOCK", 64)
    line = (json.dumps({"text": "0123456789" * 3}) + "\n").encode()
    for at in (0, 5, 63, 64, 65, 100, len(line) * 7 + 3):
        data = bytearray(line * 20)
        data[at] = 0
        path = tmp_path / ("c.jsonl" + ("" if suffix == ".jsonl" else suffix))
        write_compressed(path, bytes(data))
        with pytest.raises(AuditorError) as caught:
            list(textstream.jsonl_texts(path, "text"))
        assert caught.value.code == "bad_format"
        assert re.search(r"byte (\d+) is a NUL byte", caught.value.message).group(1) == str(at)


def test_utf16_and_gzip_inside_a_plain_name_are_refused_at_once(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes('{"text": "a"}\n'.encode("utf-16"))
    with pytest.raises(AuditorError, match="UTF-16"):
        list(textstream.jsonl_texts(path, "text"))
    path.write_bytes(gzip.compress(b'{"text": "a"}\n'))
    with pytest.raises(AuditorError, match="gzip-compressed"):
        list(textstream.jsonl_texts(path, "text"))


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


@pytest.mark.parametrize("block", [None, 4099])
def test_every_codec_through_the_local_engine(codec_corpus, monkeypatch, block):
    """Each compressed shard goes through readinto (Python's gzip/bz2/xz, pyarrow's zstd/lz4/brotli),
    with 8 MiB reads and with 4 KiB ones (every line cut somewhere): the same result as the list
    of texts, every token of the definition counted, the planted questions found at their rows."""
    folder, texts = codec_corpus
    if block:
        monkeypatch.setattr(textstream, "BLOCK", block)
    got = contamination(str(folder), "gsm8k").summary()
    listed = contamination(texts, "gsm8k").summary()
    assert got["items"] == listed["items"]
    assert got["corpus"]["records"] == len(texts)
    assert got["corpus"]["tokens"] == sum(len(tokenize(t)) for t in texts)
    found = {it["benchmark_row"]: it["corpus_rows"] for it in got["items"]}
    assert all(row in found[item] for item, row in PLANTED.items())


def test_every_codec_through_ray_equals_local(codec_corpus):
    folder, texts = codec_corpus
    on_ray = ray_contamination(str(folder), "gsm8k", quiet=True).summary()
    assert on_ray.pop("engine")["shards"] == 6
    assert on_ray == contamination(str(folder), "gsm8k").summary()
    assert on_ray["corpus"]["tokens"] == sum(len(tokenize(t)) for t in texts)


def test_truncated_streams_are_refused_by_name(codec_corpus, tmp_path):
    folder, _ = codec_corpus
    for shard in sorted(folder.iterdir()):
        cut = tmp_path / shard.name
        raw = shard.read_bytes()
        cut.write_bytes(raw[:len(raw) * 2 // 3])
        with pytest.raises(AuditorError) as caught:
            list(textstream.jsonl_texts(cut, "text"))
        assert caught.value.code == "bad_format" and cut.name in caught.value.message


# --------------------------------------------------------------------------- odd_runs' ASCII skip


def naive_counts(bench, texts, n):
    """Per benchmark item, how many texts share an n-gram with it: by the definition's tokens."""
    def grams(t):
        tok = tokenize(t)
        return {tuple(tok[i:i + n]) for i in range(len(tok) - n + 1)}
    items = [grams(t) for t in bench]
    return [sum(1 for t in texts if item & grams(t)) for item in items]


@pytest.mark.parametrize("astral_seen", [False, True])
def test_compiled_scan_equals_the_definition_at_every_alignment(monkeypatch, astral_seen):
    """Texts of ASCII runs of every length 1-19 mixed with characters the table may not take (a
    Greek capital sigma, dotted I, astral letters and emoji, NBSP, combining marks, CJK), scanned
    as Arrow slices at random offsets (so the bytes start at every alignment) by the compiled pass,
    with planes 1-2 loaded or not: tokens, texts with no word and per-item hits equal the
    definition's (``tokenize``) and naive n-gram sets."""
    monkeypatch.setattr(wordtokens, "_astral_seen", astral_seen)
    rng = random.Random(11 + astral_seen)
    odd = ["é", "Σ", "ς", "İ", "\u00a0", "𝐀", "😀", "ǅ", "\u0301", "ß", "中", "\u2028", ".", "_"]
    words = ["ab", "hé", "Σa", "𝐀b", "中文", "ßx", "İk"] + ["abcdefghijklmnopqrs"[:k] for k in range(1, 20)]

    def text():
        if rng.random() < 0.08:
            return rng.choice([None, ""])
        parts = []
        for _ in range(rng.randint(0, 12)):
            parts += [rng.choice(words) if rng.random() < 0.6 else rng.choice(odd), rng.choice([" ", "  ", "\n", ""])]
        return "".join(parts)
    for _ in range(250):
        n = rng.choice([1, 2, 3])
        bench = [t for t in (text() for _ in range(8)) if len(tokenize(t)) >= n] or ["ab hé Σa"]
        index = build_index(bench, n)
        texts = [text() for _ in range(rng.randint(0, 50))]
        lo = rng.randint(0, len(texts))
        hi = rng.randint(lo, len(texts))
        part = wordtokens.as_string_array(texts).slice(lo, hi - lo)
        scanned = scan_batch(index, part, compiled=True)
        sub = texts[lo:hi]
        assert scanned.records == len(sub)
        assert scanned.tokens == sum(len(tokenize(t)) for t in sub)
        assert scanned.no_words == sum(1 for t in sub if not tokenize(t))
        assert scanned.item_count.tolist() == naive_counts(bench, sub, n)


def test_odd_runs_on_empty_and_edge_buffers():
    """A character beyond every table (U+30000, plane 3) at the ends of texts, of the buffer and
    of 8-byte words: each text (no separator in it) is one run, from its first byte to its last."""
    vocab = build_index(["ab cd"], 1).vocab
    far = "\U00030000"
    for texts in ([], [None], ["", ""], ["a" * 8 + far], ["a" * 7 + far], [far + "a" * 16],
                  ["abcdefg", "h" + far], ["a" * 15, far], [far]):
        for shift in range(8):       # the same bytes at every alignment of the buffer
            b, off = wordtokens.batch_bytes(wordtokens.as_string_array(texts))
            b = np.frombuffer(bytes(shift) + b.tobytes(), dtype=np.uint8)[shift:]
            found = wordtokens.odd_runs(b, off, vocab)
            expected = [(int(off[t]), int(off[t + 1])) for t, text in enumerate(texts) if text and far in text]
            assert [(int(s), int(e)) for s, e in zip(found.starts, found.ends)] == expected, (texts, shift)


# --------------------------------------------------------------------------- the split chosen


def write_split_folder(root, names, rows_by_name):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"text": t} for t in rows_by_name[name]]
        if name.endswith(".parquet"):
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_odd_folders_choose_the_same_files_on_both_engines(real_data, tmp_path):
    """The split each engine reads, against the files the folder was built from: only test and
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


def test_a_missing_split_is_refused_by_both_engines_and_the_cli(real_data, tmp_path, run_cli):
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


def test_cli_outputs_are_the_same_bytes_on_both_engines(real_data, tmp_path, run_cli):
    """REPORT.md byte for byte, summary.json but for its engine block, from a folder of split
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
