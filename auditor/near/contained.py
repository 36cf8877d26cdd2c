"""Contained matches: B records (the evaluation side) whose shingle set lies mostly inside one
longer A record's, |S_a & S_b| / |S_b| >= t with |S_a| >= |S_b| / t: a test question copied into a
longer training text (a prompt template around it, its worked answer after it, a passage before
it), which Jaccard misses. The length condition keeps it to what Jaccard cannot see (B copied whole
into an A that long has J <= t): without it, two questions of one template and one length that
differ in a few words (GSM8K's "a plane travels ..." and "a train travels ...", MBPP's "find the
division of ..." and "find the product of ...") would count whenever 70% of one's shingles are
shared, below the near-duplicate threshold.

Only B records whose required overlap ceil(t|S_b|) reaches ``MIN_SHARED`` shingles qualify: a
short text is inside some long text by chance. 11 word 3-shingles is a 13-word passage, the span
13-gram contamination checks treat as significant (at t = 0.7: B texts of 15 or more shingles).

B is indexed by a prefix of each S_b under one global order (rare-first by B's own frequencies):
its first |S_b| - ceil(t|S_b|) + 1 shingles. Any A record holding ceil(t|S_b|) of S_b holds one
of them (the pigeonhole principle), so candidates from the prefix index miss nothing; each is
verified by a bounded merge of the sorted shingle lists (``kernels.bounded_intersections``).
A comes in batches (``ContainedIndex.batch``, or ``candidates`` then ``verify`` with A's set
sizes where the batch holds only B's shingles, as on Ray), so both engines run this same code.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..settings import CONTAINED_METHOD as METHOD
from ..settings import CONTAINED_MIN_SHARED as MIN_SHARED
from ..shingles import set_sizes
from .result import EPS, CrossPairs
from .sink import CrossSink
from .verifier import COMPILED_MIN

BATCH_ROWS = 50_000           # A rows per batch (memory: one batch's candidates and its stacked copy)


def required_overlap(sizes: np.ndarray, threshold: float) -> np.ndarray:
    """ceil(t|S_b|): the shared shingles containment >= t needs (EPS: t|S_b| a whole number in floats)."""
    return np.ceil(threshold * np.asarray(sizes, np.float64) - EPS).astype(np.int64)


@dataclass
class ContainedIndex:
    """B's shingle sets and their prefixes (see the module docstring)."""
    threshold: float
    matrix: sp.csr_matrix          # B row x column, binary, sorted indices
    sizes: np.ndarray              # |S_b|
    need: np.ndarray               # ceil(t|S_b|); B rows below MIN_SHARED have no prefix
    prefix_t: sp.csr_matrix        # column x B row: the column is in the row's prefix

    @classmethod
    def build(cls, matrix_b: sp.csr_matrix, threshold: float) -> "ContainedIndex":
        matrix = sp.csr_matrix(matrix_b, dtype=np.float32, copy=True)
        matrix.sum_duplicates()
        matrix.data[:] = 1.0
        matrix.sort_indices()
        n, columns = matrix.shape
        sizes = set_sizes(matrix).astype(np.int64)
        need = required_overlap(sizes, threshold)
        prefix_len = np.where(need >= MIN_SHARED, sizes - need + 1, 0)
        # Each row's entries in rare-first order (ties by column), the first prefix_len[row] kept.
        df = np.bincount(matrix.indices, minlength=columns)
        row = np.repeat(np.arange(n), np.diff(matrix.indptr))
        order = np.lexsort((matrix.indices, df[matrix.indices], row))
        position = np.arange(row.size) - matrix.indptr[row]
        keep = order[position < prefix_len[row]]           # row-major order: positions line up with it
        prefix_t = sp.csr_matrix((np.ones(keep.size, np.float32), (matrix.indices[keep], row[keep])),
                                 shape=(columns, n))
        return cls(threshold, matrix, sizes, need, prefix_t)

    def batch(self, a_matrix: sp.csr_matrix) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], int]:
        """((a, b, containment) of this batch's A rows with B rows contained at >= t, by a then b;
        candidates verified). ``a_matrix``: the batch's rows, whole shingle sets, B's columns."""
        return self.verify(a_matrix, *self.candidates(a_matrix), set_sizes(a_matrix).astype(np.int64))

    def candidates(self, a_matrix: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) of the batch's rows holding a shingle of a B row's prefix, by a then b.
        ``a_matrix``: over B's columns (shingles B lacks may be left out: they share nothing)."""
        if not a_matrix.shape[0] or not self.prefix_t.nnz:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        found = (a_matrix @ self.prefix_t).tocoo()
        a, b = found.row.astype(np.int64), found.col.astype(np.int64)
        order = np.lexsort((b, a))
        return a[order], b[order]

    def verify(self, a_matrix: sp.csr_matrix, a: np.ndarray, b: np.ndarray, sizes_a: np.ndarray):
        """``batch``'s result for these candidates; ``sizes_a``: |S_a| of the batch's rows (whole
        sets), for the length condition |S_a| >= |S_b| / t."""
        fits = self.threshold * sizes_a[a] + EPS >= self.sizes[b]
        a, b = a[fits], b[fits]
        if not a.size:
            return (a, b, np.zeros(0, np.float64)), 0
        stacked = sp.vstack([a_matrix, self.matrix], format="csr")
        stacked.sort_indices()
        inter = _overlaps(stacked, a, b + a_matrix.shape[0], self.need[b])
        keep = inter >= self.need[b]
        return (a[keep], b[keep], inter[keep] / self.sizes[b[keep]]), int(a.size)


def _overlaps(nodes: sp.csr_matrix, a: np.ndarray, b: np.ndarray, need: np.ndarray) -> np.ndarray:
    """|row a[i] & row b[i]|, exactly where it reaches need[i] (below it, some count below it)."""
    sizes = np.diff(nodes.indptr)
    if int(sizes[a].sum() + sizes[b].sum()) >= COMPILED_MIN:
        from ..kernels import bounded_intersections
        out = np.empty(a.size, dtype=np.int64)
        bounded_intersections(nodes.indptr.astype(np.int64), nodes.indices, a, b, need.astype(np.int64), out)
        return out
    # Under COMPILED_MIN set entries in all: one row product, sparing a small input numba's import.
    return np.asarray(nodes[a].multiply(nodes[b]).sum(axis=1)).reshape(-1).round().astype(np.int64)


def find_contained(stacked: sp.csr_matrix, n_a: int, threshold: float, per_b: int,
                   batch_rows: int = BATCH_ROWS) -> CrossPairs:
    """Each B row's best ``per_b`` containing A rows (containment desc, then A row) of one matrix
    whose first ``n_a`` rows are A's and the others B's (``shingle_matrix(texts_a + texts_b)``);
    ``CrossPairs.jaccard`` holds the containment."""
    index = ContainedIndex.build(stacked[n_a:], threshold)
    sink = CrossSink(per_b)
    candidates = 0
    for lo in range(0, n_a, batch_rows):
        (a, b, score), scored = index.batch(stacked[lo:min(lo + batch_rows, n_a)])
        candidates += scored
        sink.add(a + lo, b, score)
    return sink.result(min_threshold=threshold, method=METHOD, candidates=candidates)
