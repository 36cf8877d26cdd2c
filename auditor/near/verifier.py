"""Exact Jaccard of candidate pairs, streamed into a sink (``sink.PairSink`` / ``CrossSink``)
so verified pairs are never all held at once. Large batches are intersected by a compiled
merge of the two sorted shingle lists (``kernels.intersections``, threads release the GIL);
small ones by scipy's row products, which spare a small input numba's import."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..parallel import thread_map
from ..shingles import set_sizes
from .prefix import size_fits
from .result import EPS

COMPILED_MIN = 2_000_000      # set entries in one batch before the compiled merge pays for its import


class Verifier:
    """Exact Jaccard of candidate pairs, keeping those >= min_threshold, into ``sink``."""

    def __init__(self, nodes: sp.csr_matrix, min_threshold: float, sink=None):
        self.nodes = nodes if nodes.has_sorted_indices else nodes.sorted_indices()
        self.t = min_threshold
        self.sizes = set_sizes(nodes)
        self.sink = ListSink() if sink is None else sink

    def verify_light(self, a: np.ndarray, b: np.ndarray):
        """Verify one batch (thread-safe). Returns ((a, b, jaccard) kept, pairs scored)."""
        jac = verify(self.nodes, a, b, sizes=self.sizes, min_threshold=self.t)
        keep = jac >= self.t - EPS
        return (a[keep], b[keep], jac[keep]), int(a.size)

    def add(self, kept) -> None:
        """Results of ``verify_light``, in batch order (main thread)."""
        self.sink.add(*kept)


def verify(nodes: sp.csr_matrix, a: np.ndarray, b: np.ndarray, budget: int = 16_000_000, *,
           sizes: np.ndarray | None = None, min_threshold: float | None = None) -> np.ndarray:
    """Exact Jaccard of node pairs (a[i], b[i]). Row products go in chunks of at most ``budget``
    set entries, so pairs of long texts cannot balloon memory. ``sizes``: the nodes' set
    sizes, when the caller has them. With ``min_threshold``, a pair below it may get any
    score below it (the compiled merge stops once the overlap J >= t needs is out of reach:
    |x & y| >= t / (1 + t) * (|x| + |y|)); pairs at or above it get their exact score."""
    sizes = set_sizes(nodes) if sizes is None else sizes
    out = np.empty(a.size, dtype=np.float64)
    if not a.size:
        return out
    entries = sizes[a] + sizes[b]
    if int(entries.sum()) >= COMPILED_MIN:
        from ..kernels import bounded_intersections, intersections
        nodes = nodes if nodes.has_sorted_indices else nodes.sorted_indices()
        inter = np.empty(a.size, dtype=np.int64)
        args = (nodes.indptr.astype(np.int64), nodes.indices, a.astype(np.int64), b.astype(np.int64))
        if min_threshold is None:
            intersections(*args, inter)
        else:
            bounded_intersections(*args, np.ceil(min_threshold / (1 + min_threshold) * entries - EPS)
                                  .astype(np.int64), inter)
        return inter / (entries - inter)
    cost = np.cumsum(entries)
    start = 0
    while start < a.size:
        stop = max(start + 1, int(np.searchsorted(cost, (cost[start - 1] if start else 0) + budget, side="right")))
        ia, ib = a[start:stop], b[start:stop]
        inter = np.asarray(nodes[ia].multiply(nodes[ib]).sum(axis=1)).reshape(-1)
        out[start:stop] = inter / (sizes[ia] + sizes[ib] - inter)
        start = stop
    return out


def cross_overlaps(matrix_a: sp.csr_matrix, matrix_b: sp.csr_matrix, a: np.ndarray, b: np.ndarray,
                   need: np.ndarray) -> np.ndarray:
    """|row a[i] of matrix_a & row b[i] of matrix_b| (one column space), exactly where it reaches
    need[i] (below it, some count below it). Read from the two matrices in place: a stacked copy of
    the two cost 8 bytes an entry of both."""
    sizes_a, sizes_b = np.diff(matrix_a.indptr), np.diff(matrix_b.indptr)
    if int(sizes_a[a].sum() + sizes_b[b].sum()) >= COMPILED_MIN:
        from ..kernels import bounded_cross_intersections
        matrix_a = matrix_a if matrix_a.has_sorted_indices else matrix_a.sorted_indices()
        matrix_b = matrix_b if matrix_b.has_sorted_indices else matrix_b.sorted_indices()
        out = np.empty(a.size, dtype=np.int64)
        bounded_cross_intersections(matrix_a.indptr.astype(np.int64), matrix_a.indices,
                                    matrix_b.indptr.astype(np.int64), matrix_b.indices, a, b,
                                    need.astype(np.int64), out)
        return out
    # Under COMPILED_MIN set entries in all: one row product, sparing a small input numba's import.
    return np.asarray(matrix_a[a].multiply(matrix_b[b]).sum(axis=1)).reshape(-1).round().astype(np.int64)


def cross_verify(matrix_a: sp.csr_matrix, matrix_b: sp.csr_matrix, a: np.ndarray, b: np.ndarray,
                 sizes_a: np.ndarray, sizes_b: np.ndarray, min_threshold: float) -> np.ndarray:
    """``verify`` of pairs (row a[i] of matrix_a, row b[i] of matrix_b): the same Jaccard for every
    pair at or above ``min_threshold`` (below it, any score below it). ``sizes_a``, ``sizes_b``: the
    whole set sizes, where a matrix holds only the shingles the other side has (the Ray leak)."""
    entries = sizes_a[a] + sizes_b[b]
    need = np.ceil(min_threshold / (1 + min_threshold) * entries - EPS).astype(np.int64)
    inter = cross_overlaps(matrix_a, matrix_b, a.astype(np.int64), b.astype(np.int64), need)
    return inter / (entries - inter)


def verify_candidates(nodes: sp.csr_matrix, a: np.ndarray, b: np.ndarray, min_threshold: float,
                      chunk: int = 1_000_000, sink=None):
    """The pairs among candidates with Jaccard >= min_threshold: the size filter, then exact
    verification in chunks on threads. They go to ``sink``; without one they are returned as
    (a, b, jaccard)."""
    fits = size_fits(set_sizes(nodes), a, b, min_threshold)
    a, b = a[fits], b[fits]
    collect = sink is None
    sink = ListSink() if collect else sink
    verifier = Verifier(nodes, min_threshold, sink)
    spans = [(lo, min(lo + chunk, a.size)) for lo in range(0, a.size, chunk)]
    for kept, _ in thread_map(lambda s: verifier.verify_light(a[s[0]:s[1]], b[s[0]:s[1]]), spans):
        verifier.add(kept)
    return sink.arrays() if collect else None


class ListSink:
    """Keeps every verified pair: for small inputs and benchmarks only (memory grows with pairs)."""

    def __init__(self):
        self.parts: list = []

    def add(self, a, b, j, **_) -> None:
        self.parts.append((a, b, j))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cat = (lambda i, dt: np.concatenate([p[i] for p in self.parts]).astype(dt) if self.parts else np.zeros(0, dt))
        return cat(0, np.int64), cat(1, np.int64), cat(2, np.float64)
