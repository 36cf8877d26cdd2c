"""The reused-buffer JSONL reader (``textstream.text_blocks`` over
``budget.CountedStream.chunk_into``): every line against ``json.loads`` however reads cut it, the
per-line cap, NUL bytes at their file offset, UTF-16 and gzip behind a plain name, every codec and
truncated streams."""
from __future__ import annotations

import bz2
import gzip
import io
import itertools
import json
import lzma
import random
import re
import pytest
pa = pytest.importorskip("pyarrow")
from auditor.io import budget
from auditor import textstream
from auditor.contamination import contamination, tokenize  # noqa: E402
from auditor.errors import AuditorError  # noqa: E402


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


def test_lines_straddling_reads_in_every_way_equal_json_loads(monkeypatch):
    """From the review of the streaming JSONL reader: Random files (CRLF, multi-byte and astral characters,
    escaped and raw U+2028, blank and
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
    """From the review of the streaming JSONL reader."""
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
    """From the review of the streaming JSONL reader: The per-line cap (1/16 of AUDITOR_MAX_BYTES, at least
    64 KiB) holds whether the long line
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
    """From the review of the streaming JSONL reader: The offset in the message is the byte's offset in the
    (decompressed) file, not in the
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
    """From the review of the streaming JSONL reader."""
    path = tmp_path / "c.jsonl"
    path.write_bytes('{"text": "a"}\n'.encode("utf-16"))
    with pytest.raises(AuditorError, match="UTF-16"):
        list(textstream.jsonl_texts(path, "text"))
    path.write_bytes(gzip.compress(b'{"text": "a"}\n'))
    with pytest.raises(AuditorError, match="gzip-compressed"):
        list(textstream.jsonl_texts(path, "text"))


@pytest.mark.parametrize("block", [None, 4099])
def test_every_codec_through_the_local_engine(codec_corpus, monkeypatch, block):
    """From the review of the streaming JSONL reader: Each compressed shard goes through readinto (Python's
    gzip/bz2/xz, pyarrow's zstd/lz4/brotli),
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


def test_truncated_streams_are_refused_by_name(codec_corpus, tmp_path):
    """From the review of the streaming JSONL reader."""
    folder, _ = codec_corpus
    for shard in sorted(folder.iterdir()):
        cut = tmp_path / shard.name
        raw = shard.read_bytes()
        cut.write_bytes(raw[:len(raw) * 2 // 3])
        with pytest.raises(AuditorError) as caught:
            list(textstream.jsonl_texts(cut, "text"))
        assert caught.value.code == "bad_format" and cut.name in caught.value.message
