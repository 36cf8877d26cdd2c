"""The contamination scan's compiled pass (``kernels.ngram_scan`` through ``contamination.scan_batch``)
finds exactly the matches an independent reference finds: the definition's tokens per text, every
n-token window of the corpus looked up among the benchmark's windows as tuples of words."""
from __future__ import annotations

import json

import numpy as np
import pytest

from auditor import contamination, wordtokens
from auditor.contamination import ROWS_LISTED, HitSet, build_index, scan_batch, tokenize

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
    # The last part: the rows sharing any window (what ``decontaminate`` leaves out).
    return reduced(found), sum(len(tokenize(t)) for t in corpus_texts), sorted({row for _, _, row in found})


def reduced(matches):
    """The reference's matches as the scan reports them: per item, its windows, and the rows
    matching it (count and the first ROWS_LISTED)."""
    windows, rows = {}, {}
    for item, b0, row in matches:
        windows.setdefault(item, set()).add(b0)
        rows.setdefault(item, set()).add(row)
    return windows, {i: len(r) for i, r in rows.items()}, {i: sorted(r)[:ROWS_LISTED] for i, r in rows.items()}


def scanned(index, texts):
    result = scan_batch(index, texts)
    hits = HitSet.from_batch(result, index)
    return (hits.windows, hits.count, hits.first), result.tokens, np.flatnonzero(result.text_hit).tolist()


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


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_grams_group_exactly_the_windows_with_equal_ids(monkeypatch, n):
    """``_grams`` against a dictionary of id tuples: one gram per distinct window, its windows
    ascending, keys ascending; with the multiplier 1, reordered windows collide on their key."""
    rng = np.random.default_rng(n)
    ids = rng.integers(0, 4, 3000)
    starts = np.sort(rng.choice(ids.size - n, 1500, replace=False))
    for mul in (contamination._MUL, np.uint64(1)):
        monkeypatch.setattr(contamination, "_MUL", mul)
        keys, offsets, windows = contamination._grams(ids, starts, n)
        expected: dict[tuple, list] = {}
        for w, s0 in enumerate(starts.tolist()):
            expected.setdefault(tuple(ids[s0:s0 + n].tolist()), []).append(w)
        got = [windows[offsets[g]:offsets[g + 1]].tolist() for g in range(keys.size)]
        assert sorted(got) == sorted(expected.values())
        assert np.all(keys[1:] >= keys[:-1]) and offsets[-1] == starts.size
        assert keys.tolist() == contamination.ngram_keys(ids, starts[windows[offsets[:-1]]], n).tolist()


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("n", [1, 3])
def test_colliding_keys_and_shared_grams(monkeypatch, texts, compiled, n):
    """With the key's multiplier set to 1 a window's key is the sum of its ids, so every reordering
    of a window's words collides (n = 3): grams sharing a key must still be told apart by their
    ids. At n = 1 and 3 many benchmark items share each gram (one confirmation credits them all)."""
    monkeypatch.setattr(contamination, "_MUL", np.uint64(1))
    bench, corpus = texts
    corpus = corpus[:300] + corpus[-40:] + [" ".join(reversed(t.split())) for t in bench[:30]]
    index = build_index(bench, n)
    assert n == 1 or index.gram_keys.size > np.unique(index.gram_keys).size      # collisions happened
    assert index.gram_keys.size < index.window_item.size              # and shared grams
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0 if compiled else 1 << 40)
    assert scanned(index, corpus) == reference_matches(bench, corpus, n)


@pytest.mark.parametrize("compiled, copies", [(True, 20_000), (False, 150)])
def test_a_corpus_repeating_the_benchmark_costs_memory_of_the_benchmark(monkeypatch, texts, compiled, copies):
    """n = 1 and a corpus that is one common word over and over: every text matches every benchmark
    window of that word (hundreds), yet the scan's memory stays that of the benchmark (matches are
    reduced as found), and the report still counts every row."""
    import tracemalloc
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0 if compiled else 1 << 40)
    bench = texts[0][:200]
    index = build_index(bench, 1)
    windows, start = {}, 0
    for item, text in enumerate(bench):
        words = tokenize(text)
        for s, word in enumerate(words):
            if word == "the":
                windows.setdefault(item, set()).add(start + s)
        start += len(words)
    assert sum(map(len, windows.values())) > 300
    corpus = ["The the THE."] * copies
    tracemalloc.start()
    hits = HitSet.from_batch(scan_batch(index, corpus), index)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert hits.windows == windows
    assert hits.count == {item: copies for item in windows}
    assert all(first == list(range(ROWS_LISTED)) for first in hits.first.values())
    # Kept as (item, window, row) matches this would be >= copies x 3 x 300 x 24 bytes (>= 64 MB).
    assert peak < 16 * 2 ** 20, peak


def test_small_and_compiled_paths_agree(monkeypatch, texts):
    bench, corpus = texts
    index = build_index(bench, 8)
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 1 << 40)
    small = scanned(index, corpus)
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    assert scanned(index, corpus) == small and small[0][0]


def test_words_longer_than_any_benchmark_word_and_unknown_words_break_windows(monkeypatch):
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    bench = ["alpha beta gamma delta", "abcdefghijklmnop qrstuvwxyz0123456789 short"]
    corpus = ["alpha beta gamma delta", "alpha beta zzz gamma delta", "ALPHA, beta! gamma? delta.",
              "abcdefghijklmnop qrstuvwxyz0123456789 short", "abcdefghijklmnopq qrstuvwxyz0123456789 short",
              "x" * 5000 + " alpha beta gamma", "alpha\nbeta\tgamma\u00a0delta"]
    index = build_index(bench, 3)
    got = scanned(index, corpus)
    assert got == reference_matches(bench, corpus, 3)
    assert set().union(*got[0][2].values()) == {0, 2, 3, 5, 6}


def test_hitset_keeps_counts_exact_and_lists_the_first_rows(monkeypatch, texts):
    """A corpus read in parts (batches, or shards scanned apart and joined with their row offsets,
    as the Ray engine joins them, through JSON as they travel) reduces to the reference's rows per
    item: their number, the first ROWS_LISTED of them, and the matched windows."""
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0)
    bench, corpus = texts
    corpus = corpus[:500] + [bench[3]] * (ROWS_LISTED + 50) + corpus[500:900]     # item 3 in 150+ rows
    index = build_index(bench, 8)
    expected, _, _ = reference_matches(bench, corpus, 8)
    cuts = [0, 333, 560, 700, len(corpus)]
    joined, parts = HitSet(), []
    for lo, hi in zip(cuts, cuts[1:]):
        parts.append(HitSet.from_batch(scan_batch(index, corpus[lo:hi]), index))
        joined.extend(HitSet.from_json(parts[-1].to_json()), lo)
    assert (joined.windows, joined.count, joined.first) == expected
    assert joined.count[3] > ROWS_LISTED and len(joined.first[3]) == ROWS_LISTED
    with pytest.raises(RuntimeError):
        joined.extend(parts[1], 0)      # rows going back (item 3's part again, at row 0): refused


def test_parts_that_meet_at_one_row_count_it_once():
    """The same row at the end of one part and the start of the next (a batch cut inside a record
    cannot happen, but the join must not count a row twice if it did)."""
    first, second = HitSet(), HitSet()
    first.windows, first.count, first.first, first.last = {0: {0}}, {0: 2}, {0: [3, 7]}, {0: 7}
    second.windows, second.count, second.first, second.last = {0: {5}}, {0: 2}, {0: [0, 4]}, {0: 4}
    first.extend(second, 7)
    assert first.count == {0: 3} and first.first == {0: [3, 7, 11]} and first.windows == {0: {0, 5}}
