"""The compiled contamination scan at every alignment of its word-at-a-time ASCII skip
(``kernels.odd_runs``), against naive n-gram sets of the definition's tokens."""
from __future__ import annotations

import random

import numpy as np
import pytest

from auditor import wordtokens
from auditor.contamination import build_index, scan_batch, tokenize  # noqa: E402


def naive_counts(bench, texts, n):
    """Per benchmark item, how many texts share an n-gram with it: by the definition's tokens."""
    def grams(t):
        tok = tokenize(t)
        return {tuple(tok[i:i + n]) for i in range(len(tok) - n + 1)}
    items = [grams(t) for t in bench]
    return [sum(1 for t in texts if item & grams(t)) for item in items]


@pytest.mark.parametrize("astral_seen", [False, True])
def test_compiled_scan_equals_the_definition_at_every_alignment(monkeypatch, astral_seen):
    """From the review of the streaming JSONL reader: Texts of ASCII runs of every length 1-19 mixed with
    characters the table may not take (a
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
    """From the review of the streaming JSONL reader: A character beyond every table (U+30000, plane 3) at
    the ends of texts, of the buffer and
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
