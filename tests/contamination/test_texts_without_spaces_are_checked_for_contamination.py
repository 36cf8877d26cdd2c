"""From the session-47 real-data review: a Chinese or Japanese benchmark (C-Eval, CMMLU, JGLUE-like
items) got nothing useful from the n-gram contamination check, whose words split on whitespace
only: an item written without spaces was one or a few "words", so it was reported as too short to
check, and a copy with one character changed was missed. Its words are now the near-duplicate
shingles' words (each Han, kana, Thai, Lao, Khmer or Myanmar character a word of its own).

Benchmarks of 40 items (30-80 characters drawn from a seeded pool of a few thousand characters,
with punctuation) are planted in a corpus verbatim, with one character changed, with a character
changed every 8 (no 13 characters left whole), inside longer records and spaced out; the items
found, the rows they are found in and their coverage are checked against an independent ground
truth (character n-grams, in plain Python), through the compiled scan, the small-batch path (the
definition), the library and the ``auditor contamination`` CLI (both paths). A fuzz set of mixed
scripts checks that the compiled scan's words are ``shingles.words(fold(t))``'s, lowercased with
punctuation stripped, in order."""
from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest

from auditor import contamination as contamination_module
from auditor.contamination import ROWS_LISTED, HitSet, build_index, contamination, scan_batch, tokenize
from auditor.evidence import contamination_spans, token_spans
from auditor.normalize import fold
from auditor.shingles import words
from auditor.wordtokens import PUNCT

N = 13              # the n "auto" takes for items of 30+ words: the 5th percentile, clamped to 8..13
PUNCTUATION = "，。、？！：；"


def character_pool(seed: int, ranges: list, size: int) -> list:
    """``size`` characters drawn from code point ranges: letters (no marks, no punctuation) that
    ``fold`` leaves as they are, so the ground truth can read the texts as written."""
    chars = [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]
    chars = [c for c in chars if c.isalpha() and fold(c) == c]
    assert len(set(map(fold, chars))) == len(chars)
    return random.Random(seed).sample(chars, min(size, len(chars)))


POOLS = {
    "chinese": lambda: character_pool(47, [(0x4E00, 0x9FFF)], 3000),
    "japanese": lambda: character_pool(48, [(0x3041, 0x3096), (0x30A1, 0x30FA), (0x4E00, 0x9FFF)], 2500),
}


def sentence(rng: random.Random, pool: list, lo: int, hi: int) -> str:
    chars = [rng.choice(pool) for _ in range(rng.randint(lo, hi))]
    for at in sorted(rng.sample(range(1, len(chars)), 3), reverse=True):
        chars.insert(at, rng.choice(PUNCTUATION[:2]))
    return "".join(chars) + rng.choice("？。")


def changed(rng: random.Random, pool: list, text: str, positions: list) -> str:
    """``text`` with the letters at these positions (among its letters) each replaced by another."""
    at = [i for i, c in enumerate(text) if c not in PUNCTUATION]
    out = list(text)
    for k in positions:
        out[at[k]] = rng.choice([c for c in pool[:50] if c != text[at[k]]])
    return "".join(out)


def build(language: str):
    """(pool, items, corpus texts) for one language, all from fixed seeds."""
    pool = POOLS[language]()
    rng = random.Random(language)
    items = [sentence(rng, pool, 30, 80) for _ in range(40)]
    filler = random.Random(language + " filler")
    corpus = [sentence(filler, pool, 60, 200) for _ in range(2500)]        # ~1 MB: the compiled scan's size
    planted = [items[i] for i in range(10)]                                         # verbatim
    for i in range(10, 20):                                                         # one character changed
        letters = sum(c not in PUNCTUATION for c in items[i])
        planted.append(changed(rng, pool, items[i], [letters // 2]))
    for i in range(20, 28):                                 # every 8th character changed: no 13 left whole
        letters = sum(c not in PUNCTUATION for c in items[i])
        planted.append(changed(rng, pool, items[i], list(range(4, letters, 8))))
    for i in range(28, 34):                                                         # inside longer records
        planted.append(f"背景：{sentence(rng, pool, 20, 40)} Question 12: {items[i]} (see below) "
                       f"{sentence(rng, pool, 20, 40)}")
    planted.append(" ".join(items[34]))                                             # spaced out
    for text in planted:
        corpus.insert(rng.randrange(len(corpus) + 1), text)
    return pool, items, corpus


def ground_truth(pool: list, items: list, corpus: list, n: int) -> dict:
    """{item: (rows sharing one of its character n-grams, its coverage)}: the share of its
    characters inside one of its n-grams found in the corpus. Characters outside the pool
    (punctuation, spaces, Latin) are no words; every pool character is one."""
    letters = set(pool)

    def grams(text):
        chars = [c for c in text if c in letters]
        return [tuple(chars[s:s + n]) for s in range(len(chars) - n + 1)]

    corpus_grams = {}
    for row, text in enumerate(corpus):
        for gram in grams(text):
            corpus_grams.setdefault(gram, set()).add(row)
    out = {}
    for item, text in enumerate(items):
        found = [s for s, gram in enumerate(grams(text)) if gram in corpus_grams]
        if found:
            rows = set().union(*(corpus_grams[g] for g in grams(text) if g in corpus_grams))
            covered = {s + k for s in found for k in range(n)}
            length = sum(c in letters for c in text)
            out[item] = (sorted(rows), round(len(covered) / length, 4))
    return out


@pytest.fixture(scope="module", params=sorted(POOLS))
def case(request):
    pool, items, corpus = build(request.param)
    return request.param, pool, items, corpus, ground_truth(pool, items, corpus, N)


def test_the_ground_truth_sees_the_planted_copies(case):
    _, _, _, _, truth = case
    # verbatim, one character changed, inside longer records and spaced out: found; the rest not
    assert sorted(truth) == list(range(20)) + list(range(28, 35))
    assert all(coverage == 1.0 for item, (_, coverage) in truth.items() if item < 10 or item >= 28)


@pytest.mark.parametrize("compiled", [True, False])
def test_the_scan_finds_what_the_ground_truth_finds(case, compiled):
    _, _, items, corpus, truth = case
    index = build_index(items)
    assert index.n == N and not index.too_short      # before: every item was a few words, too short
    assert sum(len(t.encode()) for t in corpus) > 256 * 1024        # large enough for the compiled scan
    hits = HitSet.from_batch(scan_batch(index, corpus, compiled), index)
    assert hits.count == {item: len(rows) for item, (rows, _) in truth.items()}
    assert hits.first == {item: rows[:ROWS_LISTED] for item, (rows, _) in truth.items()}


def test_the_library_reports_the_ground_truth(case, tmp_path, monkeypatch):
    _, _, items, corpus, truth = case
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps({"question": t}, ensure_ascii=False) + "\n" for t in items), "utf-8")
    taken = []
    for name in ("_scan_compiled", "_scan_small"):
        original = getattr(contamination_module, name)
        monkeypatch.setattr(contamination_module, name,
                            lambda *a, _original=original, _name=name: taken.append(_name) or _original(*a))
    result = contamination(corpus, str(bench), benchmark_text="question")
    assert result.n == N and result.too_short == []
    assert {it["benchmark_row"]: (it["corpus_rows"], it["coverage"]) for it in result.items} == truth
    assert set(taken) == {"_scan_compiled"}


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.jsonl.gz"])
def test_the_cli_reports_the_ground_truth(case, tmp_path, run_cli, name):
    """A small plain JSONL corpus takes the definition's path, a compressed one the compiled scan."""
    _, _, items, corpus, truth = case
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps({"question": t}, ensure_ascii=False) + "\n" for t in items), "utf-8")
    data = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in corpus).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    code, out, err = run_cli("contamination", path, "--benchmark", bench, "--benchmark-text", "question",
                             "--text", "text", "--fail-on-overlap", "--json", "-", "--quiet")
    assert code == 1, err
    summary = json.loads(out)
    assert summary["settings"]["ngram"] == N and summary["too_short"]["records"] == 0
    assert {it["benchmark_row"]: (it["corpus_rows"], it["coverage"]) for it in summary["items"]} == truth
    assert summary["contaminated"]["records"] == len(truth)


def test_evidence_spans_are_the_characters_around_the_change(case):
    """A copy with one character changed: the shared runs are the item's characters before and after
    it, as spans of the texts as written (the corpus record's own offsets)."""
    _, pool, items, corpus, _ = case
    letters = set(pool)
    for i in range(10, 20):
        item = items[i]
        record = next(t for t in corpus if len(t) == len(item) and t != item
                      and sum(a != b for a, b in zip(t, item)) == 1)
        at = next(k for k, (a, b) in enumerate(zip(item, record)) if a != b)
        spans = contamination_spans(item, record, N)
        kept = [k for k, c in enumerate(item) if c in letters]
        before, after = [k for k in kept if k < at], [k for k in kept if k > at]
        expected = [[before[0], before[-1] + 1], [after[0], after[-1] + 1]]
        assert spans["benchmark_spans"] == expected and spans["corpus_spans"] == expected
        assert [tok for tok, _, _ in token_spans(item)] == tokenize(item) == [item[k] for k in kept]


# --------------------------------------------------------------------------- one word definition

def mixed_texts(count: int, seed: int = 47) -> list:
    """Random texts of code points from the scripts written without spaces (extension planes
    included: those past U+2FFFF go through the definition's odd runs), mixed with ASCII, Latin,
    Greek (capital sigma, whose lowercase reads its neighbours), Hangul, emoji, combining and hidden
    characters and spaces of several kinds."""
    rng = random.Random(seed)
    ranges = [(0x0E01, 0x0E5B), (0x0E81, 0x0EDF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF),
              (0x3000, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA9E0, 0xA9FE),
              (0xAA60, 0xAA7F), (0xF900, 0xFAFF), (0xFF61, 0xFF9F), (0x1AFF0, 0x1B16F), (0x20000, 0x3134F),
              (0x21, 0x7E), (0xC0, 0x24F), (0x391, 0x3C9), (0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x1F300, 0x1F6FF),
              (0x300, 0x36F), (0x200B, 0x200D), (0x3A3, 0x3A3)]
    spaces = [" ", " ", "\t", "\n", "\u00a0", "\u3000", "\u2009"]
    out = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.15:
                chars.append(rng.choice(spaces))
            else:
                lo, hi = rng.choice(ranges)
                c = rng.randint(lo, hi)
                chars.append(chr(c) if not 0xD800 <= c < 0xE000 else "x")
        out.append("".join(chars))
    return out


def shingle_words(text: str) -> list:
    """The near-duplicate shingles' words (``shingles.words`` of the folded text), each lowercased
    with punctuation and underscores stripped, the empty ones dropped: GPT-3's n-gram words."""
    return [w for w in (PUNCT.sub("", word.lower()) for word in words(fold(text))) if w]


def test_the_compiled_scan_reads_the_shingles_words():
    """Each text's words through the compiled scan: a benchmark of its expected words as one item
    (n = their number, so the whole sequence must match in order) and n = 1 over every word (so no
    other word appears); texts grouped by their number of words, one index per group."""
    texts = mixed_texts(600)
    expected = [shingle_words(t) for t in texts]
    assert [tokenize(t) for t in texts] == expected                     # the definition
    assert [[tok for tok, _, _ in token_spans(t)] for t in texts] == expected     # evidence's tokens
    assert sum(len(e) > 1 for e in expected) > 500 and max(map(len, expected)) <= 64
    items = [" ".join(e) for e in expected]
    assert [tokenize(item) for item in items] == expected               # each item reads back as its words
    by_length: dict[int, list] = {}
    for row, e in enumerate(expected):
        by_length.setdefault(len(e), []).append(row)
    padding = "x" * (300 * 1024)                     # past wordtokens.SMALL_BYTES: the compiled scan
    for length, rows in sorted(by_length.items()):
        if length == 0:
            scan = scan_batch(build_index(["placeholder"], 1), [texts[r] for r in rows] + [padding], True)
            assert scan.no_words == len(rows) and scan.tokens == 1
            continue
        index = build_index([items[r] for r in rows], length)
        scan = scan_batch(index, [texts[r] for r in rows] + [padding], True)
        assert scan.tokens == sum(len(expected[r]) for r in rows) + 1
        hits = HitSet.from_batch(scan, index)
        for k, row in enumerate(rows):          # n = the length: a row matches an item with its very words
            same = [j for j, other in enumerate(rows) if expected[other] == expected[row]]
            assert hits.count.get(k) == len(same) and hits.first[k] == same[:ROWS_LISTED], texts[row]
    vocabulary = sorted({w for e in expected for w in e})
    index = build_index(vocabulary, 1)
    scan = scan_batch(index, texts + [padding], True)
    hits = HitSet.from_batch(scan, index)
    for item, word in enumerate(vocabulary):
        rows = [r for r, e in enumerate(expected) if word in e]
        assert hits.count[item] == len(rows) and hits.first[item] == rows[:ROWS_LISTED]
    assert np.count_nonzero(scan.text_hit[:-1]) == sum(bool(e) for e in expected)
