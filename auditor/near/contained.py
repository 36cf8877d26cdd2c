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
A comes in batches (``ContainedIndex.batch``; on Ray with A's set sizes given, since a batch there
holds only B's shingles), so both engines run this same code.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..settings import CONTAINED_METHOD as METHOD
from ..settings import CONTAINED_MIN_SHARED as MIN_SHARED
from ..shingles import row_counts, set_sizes
from .prefix import entry_slices, leading_entries, rare_first_rank, row_list_lengths
from .result import EPS, CrossPairs
from .sink import CrossSink
from .verifier import cross_overlaps

BATCH_ROWS = 50_000           # A rows per batch (memory: one batch's candidates and its copy) ...
BATCH_ENTRIES = 1 << 22       # ... and about this many shingles (few long records: a few rows a batch)
CANDIDATE_CHUNK = 1 << 20     # candidate pairs made and verified at a time within a batch (at least a row's)


def required_overlap(sizes: np.ndarray, threshold: float) -> np.ndarray:
    """ceil(t|S_b|): the shared shingles containment >= t needs (EPS: t|S_b| a whole number in floats)."""
    return np.ceil(threshold * np.asarray(sizes, np.float64) - EPS).astype(np.int64)


@dataclass
class ContainedIndex:
    """B's shingle sets and their prefixes (see the module docstring)."""
    threshold: float
    matrix: sp.csr_matrix          # B row x column, bool, sorted indices
    sizes: np.ndarray              # |S_b|
    need: np.ndarray               # ceil(t|S_b|); B rows below MIN_SHARED have no prefix
    prefix_columns: np.ndarray     # the columns in some row's prefix, sorted (int32)
    in_prefix: np.ndarray          # bool per column: in ``prefix_columns``
    prefix_t: sp.csr_matrix        # prefix column (its place in ``prefix_columns``) x B row

    @classmethod
    def build(cls, matrix_b: sp.csr_matrix, threshold: float, copy: bool = True) -> "ContainedIndex":
        """``copy=False``: ``matrix_b`` is the caller's to give (a slice made for it), so it is made
        binary and sorted in place, not copied (a copy cost 8 bytes an entry of B)."""
        matrix = sp.csr_matrix(matrix_b, dtype=bool, copy=copy)
        matrix.sum_duplicates()
        matrix.data[:] = True
        matrix.sort_indices()
        n, columns = matrix.shape
        sizes = set_sizes(matrix).astype(np.int64)
        need = required_overlap(sizes, threshold)
        prefix_len = np.minimum(np.where(need >= MIN_SHARED, sizes - need + 1, 0), sizes)
        used, local = _own_columns(matrix.indices, columns)
        # Each row's entries in rare-first order (ties by column: ``rare_first_rank``), the first
        # prefix_len[row] kept. Sorted as ranks within rows, not by a lexsort of (row, df, column),
        # whose int64 keys and order took about 40 bytes an entry of B.
        rank = rare_first_rank(np.bincount(local, minlength=used.size))
        ranked = sp.csr_matrix((np.ones(matrix.nnz, np.int8), rank[local], matrix.indptr), shape=(n, used.size))
        del local
        ranked.sort_indices()
        kept = ranked.indices[leading_entries(ranked.indptr, prefix_len)]      # ranks, row-major
        del ranked
        # The prefix matrix over the prefix columns only, each numbered by its place among them in
        # column order: its transpose then has a row pointer per prefix column, not one per column
        # of the whole matrix (and no column per rank is made), 8 bytes a column less; for long
        # texts, a column a shingle.
        is_kept = np.zeros(used.size, dtype=bool)
        is_kept[kept] = True
        prefix_local = np.flatnonzero(is_kept[rank])     # B's columns in some prefix, in column order
        del is_kept
        prefix_columns = used[prefix_local].astype(np.int32)
        in_prefix = np.zeros(columns, dtype=bool)
        in_prefix[prefix_columns] = True
        ranks_of = rank[prefix_local]                    # the prefix columns' ranks, in column order
        del rank, used, prefix_local
        order = np.argsort(ranks_of, kind="stable")      # place in ``prefix_columns`` of each kept rank, by rank
        place = order[np.searchsorted(ranks_of[order], kept)].astype(np.int32)
        del ranks_of, order, kept
        indptr = np.concatenate(([0], np.cumsum(prefix_len)))
        prefix = sp.csr_matrix((np.ones(place.size, np.float32), place, indptr), shape=(n, prefix_columns.size))
        del place
        return cls(threshold, matrix, sizes, need, prefix_columns, in_prefix, prefix.T.tocsr())

    def batch(self, a_matrix: sp.csr_matrix, sizes_of=None) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], int]:
        """((a, b, containment) of this batch's A rows with B rows contained at >= t, by a then b;
        candidates verified). ``a_matrix``: the batch's rows over B's columns. ``sizes_of(rows)``:
        |S_a| of the batch's rows (an array by row, right at least at ``rows``) where ``a_matrix``
        holds only the shingles B has (the Ray leak); by default its own set sizes.
        The candidates are made and verified a stretch of rows at a time, each stretch with at most
        about CANDIDATE_CHUNK of them (at least a row): where nearly every A row holds a shingle of
        nearly every B row's prefix (text over a few letters), a batch's candidates held 50 bytes a
        pair, 530 MB for 8 MB read."""
        own = set_sizes(a_matrix).astype(np.int64) if sizes_of is None else None
        a_matrix = a_matrix if a_matrix.has_sorted_indices else a_matrix.sorted_indices()    # once, not a stretch at a time
        query = self._query(a_matrix)
        found, scored = [], 0
        for lo, hi in entry_slices(self._candidate_ends(query), 0, query.shape[0], CANDIDATE_CHUNK):
            a, b = self._pairs(query[lo:hi])
            a += lo
            kept, count = self.verify(a_matrix, a, b, own if own is not None else sizes_of(np.unique(a)))
            found.append(kept)
            scored += count
        if len(found) == 1:
            return found[0], scored
        if not found:
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)), 0
        return tuple(np.concatenate(parts) for parts in zip(*found)), scored

    def _query(self, a_matrix: sp.csr_matrix) -> sp.csr_matrix:
        """The batch's entries in some prefix, numbered by their place in ``prefix_columns``."""
        held = self.in_prefix[a_matrix.indices]
        places = np.searchsorted(self.prefix_columns, a_matrix.indices[held]).astype(np.int32)
        indptr = np.concatenate(([0], np.cumsum(row_counts(a_matrix.indptr, held))))
        return sp.csr_matrix((np.ones(places.size, np.float32), places, indptr),
                             shape=(a_matrix.shape[0], self.prefix_columns.size))

    def _candidate_ends(self, query: sp.csr_matrix) -> np.ndarray:
        """Running sums of a bound on each query row's candidates (the B prefixes holding each of
        its prefix shingles, at most every B row), as ``entry_slices`` reads a row pointer."""
        bound = row_list_lengths(query, self.prefix_t.indptr, 0, query.shape[0])
        np.minimum(bound, self.matrix.shape[0], out=bound)
        return np.concatenate(([0.0], np.cumsum(bound)))

    def _pairs(self, query: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) of the query rows sharing a prefix shingle with B rows, by a then b."""
        if not query.shape[0] or not self.prefix_t.nnz:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        found = (query @ self.prefix_t).tocoo()
        a, b = found.row.astype(np.int64), found.col.astype(np.int64)
        del found
        order = np.lexsort((b, a))
        return a[order], b[order]

    def verify(self, a_matrix: sp.csr_matrix, a: np.ndarray, b: np.ndarray, sizes_a: np.ndarray):
        """``batch``'s result for these candidates; ``sizes_a``: |S_a| of the batch's rows (whole
        sets), for the length condition |S_a| >= |S_b| / t."""
        fits = self.threshold * sizes_a[a] + EPS >= self.sizes[b]
        a, b = a[fits], b[fits]
        if not a.size:
            return (a, b, np.zeros(0, np.float64)), 0
        inter = cross_overlaps(a_matrix, self.matrix, a, b, self.need[b])
        keep = inter >= self.need[b]
        return (a[keep], b[keep], inter[keep] / self.sizes[b[keep]]), int(a.size)


def _own_columns(indices: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """(B's columns ascending, each entry's place among them as int32): the ranks and masks of
    ``ContainedIndex.build`` are then per column B holds, not per column of the whole matrix (a leak
    of 1,000 records against 100 MB of Chinese text held four of those over 18M columns, 350 MB).
    A B far narrower than the matrix sorts its columns (about 16 bytes an entry of B at the peak);
    a wide one marks them in a mask over the columns (5 bytes a column)."""
    if indices.size * 8 < columns:
        used = np.unique(indices)
        return used, np.searchsorted(used, indices).astype(np.int32)
    is_used = np.zeros(columns, bool)
    is_used[indices] = True
    place = np.cumsum(is_used, dtype=np.int32)
    place -= 1
    return np.flatnonzero(is_used), place[indices]


def find_contained(stacked: sp.csr_matrix, n_a: int, threshold: float, per_b: int,
                   batch_rows: int = BATCH_ROWS) -> CrossPairs:
    """Each B row's best ``per_b`` containing A rows (containment desc, then A row) of one matrix
    whose first ``n_a`` rows are A's and the others B's (``shingle_matrix(texts_a + texts_b)``);
    ``CrossPairs.jaccard`` holds the containment."""
    index = ContainedIndex.build(stacked[n_a:], threshold, copy=False)      # the slice is a copy already
    sink = CrossSink(per_b)
    candidates = 0
    # At most batch_rows rows and about BATCH_ENTRIES entries (a batch is copied out of the matrix).
    for lo, hi in entry_slices(stacked.indptr, 0, n_a, BATCH_ENTRIES, batch_rows):
        (a, b, score), scored = index.batch(stacked[lo:hi])
        candidates += scored
        sink.add(a + lo, b, score)
    return sink.result(min_threshold=threshold, method=METHOD, candidates=candidates)
