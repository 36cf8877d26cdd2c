"""The contamination scan's compiled pass (``kernels.ngram_scan`` through ``contamination.scan_batch``)
finds exactly the matches an independent reference finds: the definition's tokens per text, every
n-token window of the corpus looked up among the benchmark's windows as tuples of words."""
from __future__ import annotations

import json

import numpy as np
import pytest

from auditor import contamination, wordtokens
from auditor.contamination import build_index, scan_batch, tokenize

ODD = ["naïve café ①②③ ½ ٣ Ⅻ the cat", "ΑΣ ΑΣ'Α Σ ὈΔΥΣΣΕΎΣ. the cat sat", "\ud800 lone surrogate \udfff",
       "x_y __init__ a_1 _", "", None, "İstanbul ǅ ß ﬁ ẞ the", "don't—stop “quoted” … «x»", "😀 emoji😀b 👍🏽"]


def reference_matches(bench_texts, corpus_texts, n):
    """{(item, window start in the benchmark's concatenated tokens, corpus row)} by tuple lookup."""
    windows, start = {}, 0
    for item, text in enumerate(bench_texts):
        words = tokenize(text)
        for s in range(len(words) - n + 1):
            windows.setdefault(tuple(words[s:s + n]), []).append((item, start + s))
        start += len(words)
    found = set()
    for row, text in enumerate(corpus_texts):
        words = tokenize(text)
        for s in range(len(words) - n + 1):
            for item, b0 in windows.get(tuple(words[s:s + n]), ()):
                found.add((item, b0, row))
    return found, sum(len(tokenize(t)) for t in corpus_texts)


def scanned(index, texts):
    result = scan_batch(index, texts)
    return set(zip(result.item.tolist(), result.window.tolist(), result.record.tolist())), result.tokens


@pytest.fixture(scope="module")
def texts(real_data):
    def read(rel, field):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line)[field] for line in handle if line.strip()]
    bench = read("gsm8k/test.jsonl", "question")[:400] + ODD
    # The corpus: GSM8K train questions and answers (many shared phrases with the test questions),
    # 60 test questions copied in whole, and the odd texts, with Unicode runs next to known words.
    corpus = read("gsm8k/train.jsonl", "question")[:3000] + read("gsm8k/train.jsonl", "answer")[:1000]
    corpus += bench[:60] + ODD * 3 + [" ".join(bench[5:9]) + " naïve café " + bench[9]]
    return bench, corpus


@pytest.mark.parametrize("n", [1, 2, 5, 13])
def test_compiled_scan_equals_the_reference(monkeypatch, texts, n):
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)           # every batch through the compiled pass
    bench, corpus = texts
    if n == 1:      # every shared word is a match: a slice of the corpus has millions already
        corpus = corpus[:100] + corpus[-40:]
    index = build_index(bench, n)
    assert scanned(index, corpus) == reference_matches(bench, corpus, n)


def test_a_full_output_resumes_inside_the_text(monkeypatch, texts):
    """The output arrays start with room for 1 match and grow: every match is still reported once."""
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    monkeypatch.setattr(contamination, "MATCHES_PER_CALL", 1)
    bench, corpus = texts
    index = build_index(bench, 3)
    expected = reference_matches(bench, corpus, 3)
    assert len(expected[0]) > 1000
    assert scanned(index, corpus) == expected


def test_small_and_compiled_paths_agree(monkeypatch, texts):
    bench, corpus = texts
    index = build_index(bench, 8)
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 1 << 40)
    small = scanned(index, corpus)
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    assert scanned(index, corpus) == small and small[0]


def test_words_longer_than_any_benchmark_word_and_unknown_words_break_windows(monkeypatch):
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    bench = ["alpha beta gamma delta", "abcdefghijklmnop qrstuvwxyz0123456789 short"]
    corpus = ["alpha beta gamma delta", "alpha beta zzz gamma delta", "ALPHA, beta! gamma? delta.",
              "abcdefghijklmnop qrstuvwxyz0123456789 short", "abcdefghijklmnopq qrstuvwxyz0123456789 short",
              "x" * 5000 + " alpha beta gamma", "alpha\nbeta\tgamma\u00a0delta"]
    index = build_index(bench, 3)
    got = scanned(index, corpus)
    assert got == reference_matches(bench, corpus, 3)
    assert {row for _, _, row in got[0]} == {0, 2, 3, 5, 6}


def test_hitset_keeps_counts_exact_and_lists_the_first_rows(monkeypatch, texts):
    """Matches of a corpus read in parts (batches added in order; parts scanned apart and joined with
    their row offsets, as the Ray engine joins shards) reduce to the reference's rows per item: their
    number, the first ROWS_LISTED of them, and the matched windows."""
    from auditor.contamination import ROWS_LISTED, HitSet
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    bench, corpus = texts
    corpus = corpus[:500] + [bench[3]] * (ROWS_LISTED + 50) + corpus[500:900]     # item 3 in 150+ rows
    index = build_index(bench, 8)
    expected, _ = reference_matches(bench, corpus, 8)
    rows, windows = {}, {}
    for item, b0, row in expected:
        rows.setdefault(item, set()).add(row)
        windows.setdefault(item, set()).add(b0)
    cuts = [0, 333, 560, 700, len(corpus)]
    in_order, joined = HitSet(), HitSet()
    for lo, hi in zip(cuts, cuts[1:]):
        part = scan_batch(index, corpus[lo:hi])
        in_order.add(part.item, part.window, part.record + lo)
        alone = HitSet()
        alone.add(part.item, part.window, part.record)
        joined.extend(HitSet.from_json(alone.to_json()), lo)
    for hits in (in_order, joined):
        assert hits.count == {item: len(r) for item, r in rows.items()}
        assert hits.first == {item: sorted(r)[:ROWS_LISTED] for item, r in rows.items()}
        assert hits.windows == windows
    assert hits.count[3] > ROWS_LISTED and len(hits.first[3]) == ROWS_LISTED
    with pytest.raises(RuntimeError):
        one = np.array([3], dtype=np.int64)
        in_order.add(one, np.array([min(windows[3])], dtype=np.int64), one * 0)    # item 3's rows going back: refused
