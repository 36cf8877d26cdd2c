"""The search writes its nodes over the matrix it is handed when the caller is done with it
(``find_pairs(reuse_matrix=True)``, as the scan does), and its prefix index holds the shared
shingles only: the same pairs as a search over an untouched matrix and as the pure-Python
reference (ground_truth.py). From the session-49 memory work (issue 34, item 2: near duplicates
everywhere, where the nodes' copy of the matrix was the search's largest cost)."""
from __future__ import annotations

import random

import numpy as np
import pytest
import scipy.sparse as sp

import ground_truth as gt
from auditor import near, parallel, shingles
from auditor.clusters import cluster_labels
from auditor.near import prefix
from auditor.shingles import rows_in_place, shingle_matrix

THRESHOLDS = (0.9, 0.7, 0.5, 0.4, 0.3)


@pytest.fixture(scope="module")
def copied_questions(real_data):
    """Real GSM8K questions, edited copies of some of them, exact copies (several records a node)
    and 400 copies of one notice that differ in one word (a class of nodes)."""
    rng = random.Random(11)
    questions = gt.read_field(real_data, "gsm8k/train.jsonl", "question", 900)
    pool = " ".join(questions).split()
    edited = [" ".join(rng.choice(pool) if rng.random() < 0.15 else w for w in q.split())
              for q in questions[:300] for _ in range(2)]
    notice = "this page is kept for the records of the school board and is not updated any more".split()
    notices = [" ".join(notice) + f" ref{i}" for i in range(400)]
    texts = questions + edited + questions[:40] + notices + ["", None]
    rng.shuffle(texts)
    return texts, gt.reference(texts, "word", 3)


def _components(pairs, threshold):
    label = cluster_labels(pairs, threshold)[0]
    return sorted(tuple(np.flatnonzero(label == lab).tolist()) for lab in np.unique(label[label >= 0]))


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_rows_written_in_place_equal_a_row_selection(chunk, monkeypatch):
    monkeypatch.setattr(shingles, "ROWS_IN_PLACE_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for trial in range(40):
        n, m = int(rng.integers(1, 200)), int(rng.integers(1, 60))
        matrix = sp.random(n, m, density=float(rng.random()), random_state=int(rng.integers(2 ** 31)),
                           format="csr").astype(bool)
        matrix.indices, matrix.indptr = matrix.indices.astype(np.int32), matrix.indptr.astype(np.int32)  # as shingled
        rows = np.flatnonzero(rng.random(n) < rng.random())
        want = matrix[rows].toarray()
        owned = matrix.copy()
        buffer = owned.indices
        kept = rows_in_place(owned, rows)
        assert np.array_equal(kept.toarray(), want), trial
        assert kept.indices.dtype == np.int32 and kept.has_sorted_indices
        if kept.nnz >= buffer.size // 2:               # (scipy copies a part under half its buffer)
            assert np.shares_memory(kept.indices, buffer)             # no copy
        else:                                          # copied: the source lets its buffers go
            assert owned.nnz == 0 and owned.indices.size == owned.data.size == 0


def test_search_over_its_own_matrix_finds_the_reference_pairs(copied_questions):
    texts, ref = copied_questions
    kept = near.find_pairs(shingle_matrix(texts), 0.3)
    matrix = shingle_matrix(texts)
    reused = near.find_pairs(matrix, 0.3, reuse_matrix=True)
    assert reused.n_nodes < len(texts) - 2           # exact copies collapsed: the rows were moved
    for t in THRESHOLDS:
        assert reused.record_pairs(t) == ref.pair_count(t) == kept.record_pairs(t), t
        assert _components(reused, t) == [tuple(c) for c in ref.clusters(t)], t
    for name in ("a", "b", "jaccard", "forest_a", "forest_b", "forest_jaccard", "node_of", "weight"):
        assert np.array_equal(getattr(reused, name), getattr(kept, name)), name


def test_prefix_matrix_holds_the_shared_shingles_ranked_rarest_first(copied_questions):
    """Each node's prefix (its first |x| - ceil(t|x|) + 1 shingles in (count, column) order), less
    the shingles no other node holds, numbered by their rank among the shared shingles."""
    texts, _ = copied_questions
    nodes = near.collapse_identical(shingle_matrix(texts))[2]
    t = 0.5
    df = np.bincount(nodes.indices, minlength=nodes.shape[1])
    shared = [c for c in range(nodes.shape[1]) if df[c] >= 2]
    rank = {c: r for r, c in enumerate(sorted(shared, key=lambda c: (df[c], c)))}
    prefixes = prefix.prefix_matrix(nodes, t)
    assert prefixes.shape == (nodes.shape[0], len(shared))
    for row in range(nodes.shape[0]):
        columns = sorted(nodes.indices[nodes.indptr[row]:nodes.indptr[row + 1]].tolist(), key=lambda c: (df[c], c))
        size = len(columns)
        length = size - int(np.ceil(t * size - 1e-9)) + 1
        want = sorted(rank[c] for c in columns[:length] if c in rank)
        assert prefixes.indices[prefixes.indptr[row]:prefixes.indptr[row + 1]].tolist() == want, row


def test_results_in_hand_stay_bounded_while_the_caller_is_slow(monkeypatch):
    """``parallel.thread_map`` starts at most AHEAD x WORKERS items before their results are taken
    (a join's verified blocks waited all together for a slower sink), in input order."""
    monkeypatch.setattr(parallel, "WORKERS", 2)
    started, taken = [], []

    def work(x):
        started.append(x)
        return x * x

    out = []
    for value in parallel.thread_map(work, range(40)):
        out.append(value)
        taken.append(len(out))
        assert len(started) - len(out) < parallel.AHEAD * 2 + 1
    assert out == [x * x for x in range(40)]
    # A caller that stops early leaves nothing more started.
    started.clear()
    stream = parallel.thread_map(work, range(1000))
    next(stream)
    stream.close()
    assert len(started) <= parallel.AHEAD * 2 + 2
