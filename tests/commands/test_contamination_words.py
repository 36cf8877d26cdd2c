"""The contamination scan's words (the compiled pass in auditor/kernels.py with auditor/wordtokens.py,
and the small-batch path) are exactly the reference definition's (``tokenize`` per text), and its
JSONL reader (auditor/textstream.py) gives exactly ``json.loads`` per line with ``as_text`` per record.

Words are checked through the scan itself: the benchmark holds every distinct word of the texts as
an item of its own and n = 1, so each word a text holds must match its item, and no other; the
rows matching each item (their number and the first 100) and the word count must equal the
definition's."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from auditor import wordtokens
from auditor.contamination import ROWS_LISTED, HitSet, build_index, contamination, scan_batch, tokenize
from auditor.errors import AuditorError
from auditor.roles import as_text
from auditor.textstream import jsonl_texts


EDGE_CASES = [
    "", None, " ", "\t\n", "\x1c\x1d\x1e\x1fa\x1fb",            # str.split() splits on \x1c-\x1f too
    "ΑΣ ΑΣ'Α Σ ὈΔΥΣΣΕΎΣ.", "İstanbul ǅ ß ﬁ ẞ",                     # final sigma, multi-character lowercase
    "a\u00a0b\u2009c\u3000d\u2028e\u0085f", "don't—stop “quoted” … «x»",   # Unicode whitespace, punctuation
    "x_y __init__ a_1 _", "naïve café ①②③ ½ ٣ Ⅻ", "😀 emoji😀b 👍🏽",
    "abc\x00def", "ÀB C\u0301D", "\ud800 lone surrogate \udfff", "MiXeD CaSe 123abc ABC-DEF",
    "averyveryverylongwordindeed then short", "ABCDEFGH abcdefgh abcdefghi",   # the 8-byte packing's edges
]


def check_words(texts, compiled=True):
    """The scan's words for ``texts`` equal the definition's (see the module docstring)."""
    words = sorted({w for t in texts for w in tokenize(t)}) or ["placeholder"]
    index = build_index(words, 1)
    # Each item's words as the index holds them (the definition's, of the item's text).
    vocab = [v.decode("utf-8", "surrogatepass") for v in index.vocab.to_pylist()]
    starts = np.concatenate(([0], np.cumsum(index.lengths)))
    items_of: dict[str, set] = {}
    for item in range(len(words)):
        for word_id in index.tokens[starts[item]:starts[item + 1]].tolist():
            items_of.setdefault(vocab[word_id], set()).add(item)
    rows: dict[int, list] = {}
    for row, text in enumerate(texts):
        for item in sorted({i for w in tokenize(text) for i in items_of.get(w, ())}):
            rows.setdefault(item, []).append(row)
    scan = scan_batch(index, texts, compiled)
    hits = HitSet.from_batch(scan, index)
    assert scan.tokens == sum(len(tokenize(t)) for t in texts)
    assert scan.no_words == sum(not tokenize(t) for t in texts)       # reported as records with no word
    assert hits.count == {item: len(r) for item, r in rows.items()}
    assert hits.first == {item: r[:ROWS_LISTED] for item, r in rows.items()}


def write_jsonl(path, lines):
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


def test_edge_cases():
    check_words(EDGE_CASES)


@pytest.mark.sweep
def test_every_character_up_to_u_ffff():
    """The compiled scan's Unicode table against the definition, character by character, alone and
    between letters, spaces and capital sigma (whose lowercase depends on its neighbours)."""
    chars = [chr(c) for c in range(128, 0x10000)]
    texts = []
    for lo in range(0, len(chars), 48):
        part = chars[lo:lo + 48]
        texts += [" ".join(part), "A" + "b".join(part) + "Z", "x" + "".join(part) + " Σ" + "Σ ".join(part[:8])]
    check_words(texts)


@pytest.mark.sweep
def test_capital_sigma_after_and_before_every_character():
    """Capital sigma's lowercase (final or not) in the compiled scan follows Python's rule with
    every character up to U+FFFF, and a sample of planes 1-2, as its neighbour: right before and
    after it, and behind a cased letter or a case-ignorable mark on either side."""
    codes = [c for c in range(0x10000) if not 0xD800 <= c < 0xE000] + list(range(0x10000, 0x30000, 97))
    texts = []
    for lo in range(0, len(codes), 64):
        part = [chr(c) for c in codes[lo:lo + 64]]
        texts += [" ".join(c + "Σ" for c in part), " ".join("A" + c + "Σ" for c in part),
                  " ".join("AΣ" + c for c in part), " ".join("AΣ\u0301" + c + "b" for c in part),
                  "x'".join("Σ" + c for c in part)]
    check_words(texts)
    b, off = wordtokens.batch_bytes(wordtokens.as_string_array(texts))
    assert wordtokens.odd_runs(b, off, build_index(["placeholder"], 1).vocab).starts.size == 0


def test_characters_beyond_u_ffff():
    """Planes 1-2 join the table when a batch holds a 4-byte character: cased scripts (Deseret,
    Adlam), emoji with skin tones, mathematical letters, CJK extension B, and characters past the
    table (plane 3 and beyond, which the definition takes run by run)."""
    cased = list(range(0x10400, 0x10450)) + list(range(0x1E900, 0x1E960))
    codes = cased + list(range(0x10000, 0x30000, 7)) + [0x30000, 0x3134A, 0xE0061, 0xF0000, 0x10FFFD]
    chars = [chr(c) for c in codes]
    texts = ["the 👍🏽 cat😀sat 𝐛𝐨𝐥𝐝 𠀀𠀁 ΑΣ"]
    for lo in range(0, len(chars), 48):
        part = chars[lo:lo + 48]
        texts += [" ".join(part), "A" + "b".join(part) + "Z", "x" + "".join(part) + " é"]
    check_words(texts)
    # The table takes planes 1-2 and capital sigma itself: only the run with a plane-3 character
    # goes to the definition.
    b, off = wordtokens.batch_bytes(wordtokens.as_string_array(["the 👍🏽 cat😀sat 𝐛𝐨𝐥𝐝 𠀀𠀁 ΑΣ x\U00030000y z"]))
    odd = wordtokens.odd_runs(b, off, build_index(["placeholder"], 1).vocab)
    assert odd.table.kind.size == wordtokens.ASTRAL_END
    assert [b[lo:hi].tobytes().decode() for lo, hi in zip(odd.starts, odd.ends)] == ["x\U00030000y"]


def test_small_batches_take_the_definition():
    check_words(EDGE_CASES, compiled=False)


def test_odd_runs_found_at_every_alignment():
    """The pass skips ASCII 8 bytes at a time from an aligned address: a run past the table is
    found wherever it falls against the 8-byte words (every start of the bytes, every length of
    ASCII before the run and between runs), as found by looking at every byte (the reference)."""
    vocab = build_index(["placeholder"], 1).vocab
    odd = "x\U00030000y"
    # "é" is in the table, so a run holding it must not be reported (nor a byte of it skipped).
    texts = [" " * lead + "ab " * k + odd + " cd" * gap + " " + odd + " é" + "ef" * gap + "é"
             for lead in range(9) for k in (0, 1, 2, 3, 5, 8) for gap in range(5)]
    b_all, off_all = wordtokens.batch_bytes(wordtokens.as_string_array(texts))
    for shift in range(8):          # the same texts starting at each alignment of the buffer
        b = np.frombuffer(bytes(shift) + b_all.tobytes(), dtype=np.uint8)[shift:]
        found = wordtokens.odd_runs(b, off_all, vocab)
        runs = [(int(lo), int(hi)) for lo, hi in zip(found.starts, found.ends)]
        expected = []
        for t in range(len(texts)):
            text = b[off_all[t]:off_all[t + 1]].tobytes()
            at = off_all[t]
            for piece in text.split(b" "):
                if piece and any(byte >= 0xF0 for byte in piece):
                    expected.append((int(at), int(at + len(piece))))
                at += len(piece) + 1
        assert runs == expected


def test_real_benchmark_texts(real_data):
    texts = []
    for rel, fields in [("gsm8k/train.jsonl", ("question", "answer")), ("humaneval/HumanEval.jsonl",
                        ("prompt", "canonical_solution", "test")), ("mbpp/mbpp.jsonl", ("text", "code")),
                        ("spider/train_spider.jsonl", ("question", "query"))]:
        with open(real_data / rel, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        texts += [as_text(r.get(f), f, 0) for r in rows for f in fields]
    assert len(texts) > 30_000
    check_words(texts)


@pytest.mark.sweep
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(), st.text(alphabet=" \t\n\x0b\x1fAbZ_9-'.:ΣσςİéŉǅⅫ①\u00a0\u3000\u0301\u0345\u00ad"))))
def test_random_texts(texts):
    check_words(texts)


def test_token_ids_match_a_dictionary_lookup():
    import pyarrow as pa
    texts = ["The cat sat on the mat.", "Ünïcode wörds and THE cat", None, "mat_the"]
    vocab = ["the", "cat", "mat", "wörds"]
    ids, counts = wordtokens.token_ids(texts, pa.array([w.encode() for w in vocab], pa.binary()))
    expected = [vocab.index(w) if w in vocab else -1 for t in texts for w in tokenize(t)]
    assert ids.tolist() == expected and counts.tolist() == [len(tokenize(t)) for t in texts]


def test_the_byte_classes_agree_with_the_compiled_scan():
    from auditor import kernels
    assert (wordtokens._DELETE, wordtokens._KEEP, wordtokens._SPACE, wordtokens._OTHER, wordtokens._SIGMA) == \
        (kernels.DELETE, kernels.KEEP, kernels.SPACE, kernels.OTHER, kernels.SIGMA)
    assert (wordtokens._CASED, wordtokens._IGNORABLE) == (kernels.CASED, kernels.IGNORABLE)


def test_many_runs_for_the_definition():
    """More runs the table cannot take (a character past U+2FFFF, a lone surrogate) than the first
    allocation holds, and than the definition is given at once (wordtokens.ODD_RUNS_AT_ONCE)."""
    assert 30_000 < wordtokens.ODD_RUNS_AT_ONCE < 42_000
    check_words(["\U00030000 " * 40_000 + "the ΑΣ cat", "aΣ\ud800b " * 2_000])


@pytest.mark.parametrize("compiled", [True, False])
def test_bad_utf8_past_the_first_rows_is_a_clear_error(tmp_path, monkeypatch, compiled):
    """Arrow's JSON reader passes bad UTF-8 inside a string through: the block goes to the row
    reader, whose error names the line (never a traceback from the scan)."""
    from auditor import contamination as contamination_module
    monkeypatch.setattr(contamination_module, "COMPILED_MIN_BYTES", 0 if compiled else 1 << 40)
    lines = [json.dumps({"text": f"row {i} of the corpus, plain words"}).encode() for i in range(40_000)]
    lines[30_000] = b'{"text": "a\xff b"}'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(AuditorError) as err:
        contamination(str(path), "humaneval")
    assert err.value.code == "bad_format" and "UTF-8" in err.value.message and "line 30001" in err.value.message


@pytest.mark.parametrize("compiled", [True, False])
def test_bad_utf8_in_a_binary_array_is_a_clear_error(compiled):
    """A library caller's binary array is not checked up front: its bad bytes, met while tokenising
    (next to a capital sigma, which the definition takes in the small path), are a clear error."""
    import pyarrow as pa
    texts = pa.array([b"fine words", b"A\xce\xa3\xff tail"] + [b"x " * 100_000] * compiled, pa.binary())
    with pytest.raises(AuditorError) as caught:
        scan_batch(build_index(["fine words"], 1), texts, compiled)
    assert caught.value.code == "bad_format" and "not valid UTF-8" in caught.value.message


def test_bad_utf8_in_a_parquet_column_is_a_clear_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    good = [f"row {i} with words".encode() for i in range(3000)]
    raw = good[:2000] + [b"a\xff b"] + good[2000:]
    offsets = np.r_[0, np.cumsum([len(r) for r in raw])].astype(np.int32)
    column = pa.Array.from_buffers(pa.string(), len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])
    pq.write_table(pa.table({"text": column}), tmp_path / "bad.parquet")
    with pytest.raises(AuditorError) as err:
        contamination(str(tmp_path / "bad.parquet"), "humaneval")
    assert err.value.code == "bad_format" and "utf-8" in err.value.message.lower()
    # The scan's own check, for a reader that hands it such a column (the Ray engine's Parquet reader).
    with pytest.raises(AuditorError) as err:
        scan_batch(build_index(["row with words"], 1), column)
    assert err.value.code == "bad_format" and "UTF-8" in err.value.message


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz"])
def test_jsonl_reader_equals_json_loads(tmp_path, name):
    """Arrow reads the plain blocks; the odd ones (a number as text, a lone surrogate escape, blank
    lines, a missing field) go through the row reader; the texts are the same either way."""
    lines = [json.dumps({"text": f"line {i}", "other": {"x": i}}) for i in range(5000)]
    lines[10] = json.dumps({"text": 12.5})
    lines[11] = '{"text": "\\ud800 lone"}'
    lines[12] = ""
    lines[13] = "   "
    lines[14] = json.dumps({"other": 1})
    lines[15] = json.dumps({"text": None, "x": [1, 2]})
    lines[16] = json.dumps({"text": True})
    path = tmp_path / name
    write_jsonl(path, lines)
    got = []
    for block in jsonl_texts(path, "text"):
        got += block.to_pylist() if hasattr(block, "to_pylist") else block
    expected = [as_text(json.loads(line).get("text"), "text", 0) for line in lines if line.strip()]
    assert got == expected


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz", "c.jsonl.xz"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_jsonl_reader_blocks_kept_across_reads(tmp_path, monkeypatch, name, bom):
    """The reader reuses one buffer for its reads: every block's texts, all kept until the end,
    are still the file's, with lines longer than a read (the buffer grows), a line cut by every
    read, a byte-order mark, CRLF line ends, blank lines, and no newline at the end."""
    import lzma
    from auditor import textstream
    monkeypatch.setattr(textstream, "BLOCK", 700)
    lines = []
    for i in range(400):
        text = f"line {i} " + "é" * (i % 13) + ("x" * 3000 if i % 50 == 7 else "")
        lines.append(json.dumps({"text": text, "n": i}) + ("\r" if i % 3 == 0 else ""))
        if i % 40 == 5:
            lines.append("")
    data = bom + "\n".join(lines).encode("utf-8")       # no newline after the last line
    path = tmp_path / name
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "wb") as handle:
        handle.write(data)
    blocks = list(jsonl_texts(path, "text"))
    assert len(blocks) > 20
    got = [t for block in blocks for t in (block.to_pylist() if hasattr(block, "to_pylist") else block)]
    assert got == [json.loads(line)["text"] for line in lines if line.strip()]


def test_jsonl_reader_refuses_what_the_row_reader_refuses(tmp_path):
    path = tmp_path / "two.jsonl"
    write_jsonl(path, [json.dumps({"text": "a"}), '{"text": "b"} {"text": "c"}'])   # two objects on a line
    with pytest.raises(AuditorError) as caught:
        list(jsonl_texts(path, "text"))
    assert "line 2" in caught.value.message
    path = tmp_path / "obj.jsonl"
    write_jsonl(path, [json.dumps({"text": {"nested": 1}})])
    with pytest.raises(AuditorError) as caught:
        list(jsonl_texts(path, "text"))
    assert caught.value.code == "bad_value"


def test_scan_of_a_file_equals_scan_of_its_texts(real_data):
    """The whole scan: the corpus read from a JSONL file (Arrow path) or given as a list of texts."""
    path = real_data / "gsm8k" / "train.jsonl"
    with open(path, encoding="utf-8") as handle:
        questions = [json.loads(line)["question"] for line in handle if line.strip()]
    from_file = contamination(str(path), "gsm8k", corpus_text="question", ngram=13)
    from_texts = contamination(questions, "gsm8k", ngram=13)
    assert from_file.items == from_texts.items and from_file.corpus_tokens == from_texts.corpus_tokens
    assert from_file.corpus_records == len(questions)
