"""The shingle step's and the exact search's memory-light paths give what the plain definitions give
(issue 34, item 2: peak memory per byte read).

Each path is forced on at sizes where the engine would take it only for large inputs, and compared
with an independent result: a window's column is the rank of its tuple of token ids among the
distinct tuples (Python's ``sorted``), a column's count is ``np.bincount``'s, and the exact search
cut into small slices finds the pairs of the pure-Python reference (ground_truth.py)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ground_truth as gt
from ground_truth import read_field
from auditor import near, shingles
from auditor.near import contained, verifier
from auditor.near import sink as sink_module
from auditor.shingles import column_counts, shingle_matrix, window_columns


def tuple_ranks(ids: np.ndarray, lengths: np.ndarray, k: int) -> tuple[int, list]:
    """Each window's rank among the distinct windows, from Python tuples (a short record's one
    window padded with the vocabulary's size, after every token)."""
    pad = int(ids.max()) + 1 if ids.size else 0
    windows, at = [], 0
    for n in lengths.tolist():
        tokens = ids[at:at + n].tolist()
        at += n
        if 0 < n < k:
            windows.append(tuple(tokens + [pad] * (k - n)))
        windows.extend(tuple(tokens[p:p + k]) for p in range(n - k + 1))
    rank = {w: i for i, w in enumerate(sorted(set(windows)))}
    return len(rank), [rank[w] for w in windows]


@pytest.mark.parametrize("vocabulary", [2, 40, 5_000, 3_000_000, 2 ** 31 - 2])
@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("reuse", [False, True])
def test_window_ranks_equal_sorted_tuples(monkeypatch, vocabulary, k, reuse):
    """Small vocabularies take the packed sort (key and window in one integer, sorted in place),
    larger ones the sort of keys alone searched a chunk at a time, huge ones the tuple ranking whose
    passes take either path; chunks of 5 windows cross runs of equal keys. ``reuse``: the ranks
    written over the token ids while later chunks still read them."""
    monkeypatch.setattr(shingles, "WINDOW_CHUNK", 5)
    rng = np.random.default_rng(vocabulary + k)
    lengths = rng.integers(0, 12, 80)
    ids = rng.integers(0, vocabulary, int(lengths.sum())).astype(np.int32)
    ids[rng.random(ids.size) < 0.5] = 0            # repeated windows: runs of equal keys
    ids[-1] = vocabulary - 1
    want_count, want_codes = tuple_ranks(ids, lengths, k)
    count, codes = window_columns(ids, lengths, k, reuse_tokens=reuse)
    assert count == want_count
    assert codes.dtype == np.int32 and codes.tolist() == want_codes


@pytest.mark.parametrize("k", [3, 5])
def test_window_ranks_of_words_seen_once_equal_sorted_tuples(monkeypatch, k):
    """A huge vocabulary of words each seen once (a hostile upload of random words): the first
    pass tells every window apart, so the tuple ranking stops there; the ranks still equal the
    sorted tuples'."""
    monkeypatch.setattr(shingles, "WINDOW_CHUNK", 7)
    rng = np.random.default_rng(k)
    lengths = rng.integers(0, 12, 120)
    ids = rng.permutation(np.unique(rng.integers(0, 2 ** 31 - 3, 2 * int(lengths.sum()))))[:int(lengths.sum())]
    ids = ids.astype(np.int32)
    ids[-1] = 2 ** 31 - 3
    want_count, want_codes = tuple_ranks(ids, lengths, k)
    count, codes = window_columns(ids, lengths, k, reuse_tokens=True)
    assert count == want_count == len(want_codes)
    assert codes.tolist() == want_codes


@pytest.mark.parametrize("vocabulary", [2, 40, 5_000, 65_535, 70_000, 3_000_000])
@pytest.mark.parametrize("reuse", [False, True])
@pytest.mark.parametrize("sampled", [1 << 16, 37])
def test_window_ranks_by_key_range_equal_sorted_tuples(monkeypatch, vocabulary, reuse, sampled):
    """Ranked a key range at a time (``_ranked_by_range``, on for large inputs): each pass packs and
    sorts one range's keys, keys that fill more than a range's share (a repeated text) are ranked
    apart, a vocabulary of up to 65,535 words reads a uint16 copy of the ids and writes the ranks
    over them from the start, and 3M words rank the tuples a token at a time, each pass by range.
    A sample of 37 keys misjudges the ranges' sizes, so their buffers grow. At 65,535 words and
    220,000 windows a range's keys times the windows pass 63 bits: those ranges are ordered by
    argsort, not packed (a review found the packing overflowing there and windows sharing ranks).
    The ranks equal the sorted tuples' all the same."""
    monkeypatch.setattr(shingles, "WINDOW_CHUNK", 5 if vocabulary != 65_535 else 1_000)
    monkeypatch.setattr(shingles, "RANGE_MIN", 1)
    monkeypatch.setattr(shingles, "KEY_RANGES", 4)
    monkeypatch.setattr(shingles, "RANGE_SAMPLE", sampled)
    rng = np.random.default_rng(vocabulary + sampled)
    lengths = rng.integers(0, 12, 40_000 if vocabulary == 65_535 else 300)
    ids = rng.integers(0, vocabulary, int(lengths.sum())).astype(np.int32)
    third = ids.size // 3
    ids[:third] = 1                                # a third of the windows one key: a heavy key,
    ids[third:2 * third] = 0                       # a third another
    ids[-1] = vocabulary - 1
    want_count, want_codes = tuple_ranks(ids, lengths, 3)
    count, codes = window_columns(ids, lengths, 3, reuse_tokens=reuse)
    assert count == want_count
    assert codes.dtype == np.int32 and codes.tolist() == want_codes


def test_column_counts_in_ranges_equal_bincount(monkeypatch):
    """Ranges of 1,000 columns, each read 777 entries at a time."""
    monkeypatch.setattr(shingles, "COUNT_CHUNK", 1_000)     # 51 ranges of columns
    monkeypatch.setattr(shingles, "COUNT_ENTRIES", 777)
    rng = np.random.default_rng(7)
    m = 50_500
    rows = [np.unique(rng.integers(0, m, rng.integers(0, 3_000))) for _ in range(60)]
    indptr = np.concatenate(([0], np.cumsum([r.size for r in rows])))
    matrix = sp.csr_matrix((np.ones(indptr[-1], np.float32), np.concatenate(rows), indptr), shape=(60, m))
    counts = column_counts(matrix)
    assert counts.dtype == np.int32
    assert np.array_equal(counts, np.bincount(matrix.indices, minlength=m))
    assert counts.max() >= 2
    shared, df = shingles.shared_columns(matrix)
    assert np.array_equal(shared, np.flatnonzero(counts >= 2)) and np.array_equal(df, counts[counts >= 2])


@pytest.fixture(scope="module")
def questions(real_data):
    texts = read_field(real_data, "gsm8k/train.jsonl", "question", 2500)
    # Copies with a word changed, so pairs exist at every threshold.
    return texts + [t.replace(" the ", " a ", 1) for t in texts[:400]]


@pytest.mark.parametrize("threshold", [0.3, 0.7])
def test_search_in_small_slices_finds_the_reference_pairs(questions, monkeypatch, threshold):
    """The join's products taken 64 prefix entries at a time, list lengths summed 50 entries at a
    time, columns counted in ranges of 500: the same pairs and scores as the reference, and the
    same as the search with the default sizes."""
    default = gt.engine_record_pairs(near.find_pairs(shingle_matrix(questions), threshold, "exact"), threshold)
    monkeypatch.setattr(near.prefix, "SLICE_ENTRIES", 64)
    monkeypatch.setattr(near.prefix, "LENGTHS_CHUNK", 50)
    monkeypatch.setattr(near.prefix, "PRODUCT_BUDGET", 20_000)     # many blocks
    monkeypatch.setattr(near.prefix, "FILTER_CHUNK", 7)              # candidates judged a few at a time
    monkeypatch.setattr(shingles, "COUNT_CHUNK", 500)
    sliced = gt.engine_record_pairs(near.find_pairs(shingle_matrix(questions), threshold, "exact"), threshold)
    want = gt.reference(questions, "word", 3).record_pairs(threshold)
    assert len(want) >= 400
    assert sliced == default
    assert set(sliced) == set(want)
    assert max(abs(sliced[p] - want[p]) for p in want) < 1e-12


def test_cross_search_in_small_slices_equals_default(questions, monkeypatch):
    """The leak search (B's rows as queries against A's, the indexed rows a part of the matrix)."""
    a, b = questions[:2000], questions[2000:]
    stacked = shingle_matrix(a + b)
    default = near.find_stacked_cross_pairs(stacked, len(a), 0.5)
    monkeypatch.setattr(near.prefix, "SLICE_ENTRIES", 64)
    monkeypatch.setattr(near.prefix, "LENGTHS_CHUNK", 50)
    monkeypatch.setattr(near.prefix, "FILTER_CHUNK", 7)
    monkeypatch.setattr(shingles, "COUNT_CHUNK", 500)
    sliced = near.find_stacked_cross_pairs(stacked, len(a), 0.5)
    assert sliced.pairs == default.pairs >= 400
    assert sliced.candidates == default.candidates
    for field in ("a", "b", "jaccard"):
        assert np.array_equal(getattr(sliced, field), getattr(default, field))


def contained_reference(a_texts, b_texts, threshold: float) -> dict:
    """{(a, b): containment} from Python sets: |S_a & S_b| / |S_b| >= t, |S_a| >= |S_b| / t, and
    ceil(t |S_b|) >= MIN_SHARED (near.contained's definition)."""
    sets_a, sets_b = gt.shingle_sets(a_texts), gt.shingle_sets(b_texts)
    out = {}
    for j, sb in enumerate(sets_b):
        need = int(np.ceil(threshold * len(sb) - 1e-9))
        if need < contained.MIN_SHARED:
            continue
        for i, sa in enumerate(sets_a):
            inter = len(sa & sb)
            if inter >= need and threshold * len(sa) + 1e-9 >= len(sb):
                out[(i, j)] = inter / len(sb)
    return out


@pytest.mark.parametrize("chunks", ["default", "small"])
@pytest.mark.parametrize("compiled", [True, False])
def test_contained_matches_in_small_batches_equal_python_sets(questions, monkeypatch, compiled, chunks):
    """B's prefixes ranked within rows (no lexsort), A in batches of about 3,000 shingles, overlaps
    read from the two matrices in place (the compiled merge, or scipy's row products): every
    contained pair of the Python-set definition, and the best 5 A records of each B record. With
    small chunks a batch's candidates are made a few rows at a time (about 40 pairs) and the
    sink keeps each B record's best every few pairs."""
    if chunks == "small":
        monkeypatch.setattr(contained, "CANDIDATE_CHUNK", 40)
        monkeypatch.setattr(sink_module, "CROSS_BUFFER", 7)
    rng = np.random.default_rng(11)
    a_texts = [" ".join(questions[i:i + 6]) for i in range(0, 1200, 6)]       # 200 longer texts
    b_texts = []
    for k in range(150):                        # passages cut out of them, and unrelated questions
        words = a_texts[int(rng.integers(0, len(a_texts)))].split()
        start = int(rng.integers(0, max(1, len(words) - 40)))
        b_texts.append(" ".join(words[start:start + int(rng.integers(12, 40))]) if k % 3 else questions[1500 + k])
    monkeypatch.setattr(contained, "BATCH_ENTRIES", 3_000)
    monkeypatch.setattr(verifier, "COMPILED_MIN", 0 if compiled else 10 ** 15)
    found = contained.find_contained(shingle_matrix(a_texts + b_texts), len(a_texts), 0.7, 5)
    want = contained_reference(a_texts, b_texts, 0.7)
    assert found.pairs == len(want) >= 60
    got = {(int(a), int(b)): float(c) for a, b, c in zip(found.a, found.b, found.jaccard)}
    for b in range(len(b_texts)):
        best = sorted(((-c, a) for (a, bb), c in want.items() if bb == b))[:5]
        assert [(a, b) for _, a in best] == [k for k in got if k[1] == b]
        assert all(abs(got[(a, b)] + c) < 1e-12 for c, a in best)


@pytest.mark.parametrize("width", [100, 10 ** 7])
def test_contained_index_numbers_b_columns_as_np_unique(width):
    """B's own columns and each entry's place among them (``ContainedIndex.build`` ranks those, not
    every column of the matrix): sorted when B is far narrower than the matrix, marked in a mask
    over the columns when not; both are np.unique's values and inverse."""
    indices = np.random.default_rng(width).integers(0, width, 5_000).astype(np.int32)
    used, place = contained._own_columns(indices, width)
    want_used, want_place = np.unique(indices, return_inverse=True)
    assert np.array_equal(used, want_used)
    assert place.dtype == np.int32 and np.array_equal(place, want_place.reshape(-1))
