"""Step 4, search: every pair of records whose shingle sets have Jaccard >= the lowest
threshold of interest, each verified with its true Jaccard.

Records with identical shingle sets are first collapsed into one *node* that carries
its record count, so a dataset with 100,000 copies of one text costs one node, not
five billion pairs. Candidates then come from one of two searches:

- ``exact-all-pairs``: every pair at or above the threshold, provably: candidates share a
  shingle of their *prefixes* (each set's rarest shingles, as in Bayardo et al.'s All-Pairs),
  found by sparse prefix-matrix products in bounded row blocks on several threads; a size
  filter and an overlap bound (``CandidateFilter``) drop most candidates before exact
  verification, which uses dense BLAS products for dense groups such as a shared template
  (``Verifier``). Nothing is missed, and rare shingles keep candidates close to the true pairs.
- ``minhash-lsh``: MinHash signatures (compiled, seeded) split into bands; nodes that
  agree on a whole band become candidates. Bands and rows are chosen for the lowest
  threshold, and the probability of catching a pair at each threshold is reported.

``auto`` takes the exact search unless its candidate count (known in advance from the
prefix document frequencies) would pass ``MAX_EXACT_CANDIDATES``. Either way every candidate
is verified with its exact Jaccard, so scores mean the same under both methods. The result,
``Pairs``, is cached by callers and answers any threshold at or above ``min_threshold``
without searching again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .errors import AuditorError
from . import parallel
from .parallel import thread_map
from .shingles import set_sizes

EPS = 1e-9                   # float slack when comparing a Jaccard with a threshold
# "auto" uses LSH only when the exact search's candidate bound passes this. The bound (sum of
# squared prefix frequencies) overcounts pairs that share several prefix shingles, and LSH at a
# low threshold is no cheaper on dense clusters, so the switch is kept for extreme inputs
# (measured in BENCHMARKS.md: exact beat LSH on every benchmark set, templated ones included).
MAX_EXACT_CANDIDATES = 3_000_000_000
TARGET_RECALL = 0.99         # LSH: per-pair catch probability wanted at the lowest threshold
PRODUCT_BUDGET = 8_000_000   # exact search: product entries per block, bounds memory


@dataclass(frozen=True)
class Pairs:
    """Verified near-duplicate pairs over nodes (groups of records with identical shingle sets)."""

    n_records: int
    node_of: np.ndarray = field(repr=False)    # (n_records,) node id, -1 for a record with no shingles
    weight: np.ndarray = field(repr=False)     # (n_nodes,) records per node
    a: np.ndarray = field(repr=False)          # node pairs (a < b), sorted by jaccard desc, then a, b
    b: np.ndarray = field(repr=False)
    jaccard: np.ndarray = field(repr=False)
    min_threshold: float = 0.3
    method: str = "exact-all-pairs"
    candidates: int = 0                        # node pairs whose Jaccard was computed
    num_perm: int | None = None
    bands: int | None = None
    rows: int | None = None
    seed: int | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.weight.size)

    def catch_probability(self, threshold: float) -> float:
        """Chance that the search proposes a pair whose Jaccard is exactly ``threshold``."""
        if self.method != "minhash-lsh":
            return 1.0
        return float(1.0 - (1.0 - threshold ** self.rows) ** self.bands)

    def upto(self, threshold: float) -> int:
        """How many node pairs have Jaccard >= threshold (they form a prefix)."""
        self.check_threshold(threshold)
        return int(np.searchsorted(-self.jaccard, -threshold + EPS, side="right"))

    def check_threshold(self, threshold: float) -> None:
        if not (self.min_threshold - EPS <= threshold <= 1.0):
            raise AuditorError("usage", f"Threshold {threshold} is outside the searched range "
                               f"[{self.min_threshold}, 1].",
                               "Re-run with a lower --thresholds minimum to look that low.")

    def record_pairs(self, threshold: float) -> int:
        """Unordered record pairs with Jaccard >= threshold, identical texts included."""
        k = self.upto(threshold)
        w = self.weight.astype(np.int64)
        within = int((w * (w - 1) // 2).sum())
        return within + int((w[self.a[:k]] * w[self.b[:k]]).sum())

    def members(self) -> list[np.ndarray]:
        """Record ids of every node, in record order."""
        order = np.argsort(self.node_of, kind="stable")
        order = order[self.node_of[order] >= 0]
        return np.split(order, np.cumsum(self.weight)[:-1])

    def record_pair_sample(self, threshold: float, limit: int) -> list[tuple[int, int, float]]:
        """Up to ``limit`` record pairs (a < b) with their Jaccard, highest first, then by position."""
        # Each node's first record, and the records of nodes that hold several (identical sets):
        # no per-node arrays for the other nodes, which at 1M records are most of them.
        order = np.argsort(self.node_of, kind="stable")
        order = order[self.node_of[order] >= 0]
        starts = np.cumsum(self.weight) - self.weight
        first = order[starts]
        out: list[tuple[int, int, float]] = []
        for node in np.flatnonzero(self.weight > 1):          # identical shingle sets: Jaccard 1
            m = order[starts[node]:starts[node] + min(int(self.weight[node]), limit + 1)]
            out.extend((int(m[0]), int(x), 1.0) for x in m[1:limit + 1])
        k = self.upto(threshold)
        for a, b, j in zip(self.a[:k].tolist(), self.b[:k].tolist(), self.jaccard[:k].tolist()):
            if len(out) >= 2 * limit and j < out[-1][2]:
                break
            ra, rb = int(first[a]), int(first[b])
            out.append((min(ra, rb), max(ra, rb), j))
        out.sort(key=lambda p: (-p[2], p[0], p[1]))
        return out[:limit]


# --------------------------------------------------------------------------- entry point

def find_pairs(matrix: sp.csr_matrix, min_threshold: float, method: str = "auto", *,
               num_perm: int = 128, seed: int = 1, max_exact_candidates: int = MAX_EXACT_CANDIDATES,
               progress=None) -> Pairs:
    """All record pairs with Jaccard >= ``min_threshold`` (see module docstring)."""
    if not (0 < min_threshold <= 1):
        raise AuditorError("usage", f"Threshold {min_threshold} is outside (0, 1].",
                           "Use a Jaccard threshold such as 0.7.")
    if method not in ("auto", "exact", "lsh"):
        raise AuditorError("usage", f"Unknown near-duplicate method {method!r}.", "Use auto, exact or lsh.")
    node_of, weight, nodes = collapse_identical(matrix)
    prefixes = None
    if method in ("auto", "exact"):
        prefixes = prefix_matrix(nodes, min_threshold)
    if method == "auto":
        method = "exact" if estimated_candidates(prefixes) <= max_exact_candidates else "lsh"
    common = dict(n_records=matrix.shape[0], node_of=node_of, weight=weight, min_threshold=min_threshold)
    if method == "exact":
        a, b, jac, candidates = exact_all_pairs(nodes, min_threshold, progress, prefixes)
        return Pairs(**common, **_sorted(a, b, jac), method="exact-all-pairs", candidates=candidates)
    bands, rows = choose_bands(min_threshold, num_perm)
    signatures = minhash_signatures(nodes, bands * rows, seed, progress)
    cand_a, cand_b = lsh_candidates(signatures, bands, rows)
    a, b, jac = verify_candidates(nodes, cand_a, cand_b, min_threshold)
    return Pairs(**common, **_sorted(a, b, jac), method="minhash-lsh",
                 candidates=int(cand_a.size), num_perm=num_perm, bands=bands, rows=rows, seed=seed)


def _sorted(a, b, jac) -> dict:
    order = np.lexsort((b, a, -jac))
    return {"a": a[order].astype(np.int64), "b": b[order].astype(np.int64), "jaccard": jac[order]}


def collapse_identical(matrix: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """Group records with identical non-empty shingle sets into nodes (numbered by first record)."""
    sizes = set_sizes(matrix)
    rng = np.random.default_rng(0x5EED)
    # Two independent 64-bit random weights per shingle, summed per record: a 128-bit set hash
    # (order-free, so it identifies the set); a collision needs ~2^64 distinct sets.
    h1 = rng.integers(0, 2 ** 63, size=matrix.shape[1], dtype=np.uint64)
    h2 = rng.integers(0, 2 ** 63, size=matrix.shape[1], dtype=np.uint64)
    nonempty = sizes > 0
    key1 = np.zeros(matrix.shape[0], dtype=np.uint64)
    key2 = np.zeros(matrix.shape[0], dtype=np.uint64)
    if matrix.nnz:
        starts = matrix.indptr[:-1][nonempty]
        with np.errstate(over="ignore"):
            key1[nonempty] = np.add.reduceat(h1[matrix.indices], starts)
            key2[nonempty] = np.add.reduceat(h2[matrix.indices], starts)
    key1, key2, size = key1[nonempty], key2[nonempty], sizes[nonempty]
    # Group equal (key1, key2, size); lexsort is stable, so a group's first entry is its first record.
    order = np.lexsort((size, key2, key1))
    starts = np.r_[True, (np.diff(key1[order]) != 0) | (np.diff(key2[order]) != 0) | (np.diff(size[order]) != 0)]
    starts = starts[:order.size]                   # no records: no groups
    first = order[starts]
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    # Renumber nodes by their first record, so node order follows the data.
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    node_of = np.full(matrix.shape[0], -1, dtype=np.int64)
    node_of[nonempty] = rank[inverse]
    weight = np.bincount(node_of[nonempty], minlength=first.size).astype(np.int64)
    representatives = np.flatnonzero(nonempty)[np.sort(first)]
    return node_of, weight, matrix[representatives]


def prefix_matrix(nodes: sp.csr_matrix, min_threshold: float) -> sp.csr_matrix:
    """Each set's prefix under a global rare-first shingle order: its first |x| - ceil(t|x|) + 1
    shingles. Two sets with Jaccard >= t always share a prefix shingle (the prefix filter of
    Bayardo et al.'s All-Pairs), so prefixes find every such pair while rare shingles keep the
    candidate count close to the number of true pairs."""
    n, m = nodes.shape
    sizes = set_sizes(nodes)
    df = np.bincount(nodes.indices, minlength=m)
    # Rank columns by (df, column). A stable sort of df keeps equal df in column order; on
    # the narrowest unsigned type numpy uses a radix sort (6x faster than lexsort on 20M columns).
    narrow = np.uint16 if m == 0 or df.max() < 2 ** 16 else np.uint32 if df.max() < 2 ** 32 else np.uint64
    rank = np.empty(m, dtype=np.int32)
    rank[np.argsort(df.astype(narrow), kind="stable")] = np.arange(m, dtype=np.int32)
    ranked = sp.csr_matrix((nodes.data, rank[nodes.indices], nodes.indptr), shape=(n, m))
    ranked.sort_indices()                          # per row, rarest shingle first
    prefix_len = sizes - np.ceil(min_threshold * sizes - EPS).astype(np.int64) + 1
    position = np.arange(ranked.nnz) - np.repeat(ranked.indptr[:-1], sizes)
    keep = position < np.repeat(prefix_len, sizes)
    indptr = np.concatenate(([0], np.cumsum(np.minimum(prefix_len, sizes))))
    return sp.csr_matrix((ranked.data[keep], ranked.indices[keep], indptr), shape=(n, m))


def estimated_candidates(prefixes: sp.csr_matrix) -> int:
    """Upper bound on the node pairs the exact search would score (before the size filter)."""
    df = np.bincount(prefixes.indices, minlength=prefixes.shape[1]).astype(np.float64)
    return int((df * (df - 1) / 2).sum())


def exact_all_pairs(nodes: sp.csr_matrix, min_threshold: float, progress=None, prefixes=None):
    """Every node pair with Jaccard >= min_threshold, exactly (see ``prefix_join``)."""
    prefixes = prefix_matrix(nodes, min_threshold) if prefixes is None else prefixes
    return prefix_join(nodes, prefixes, min_threshold, queries=(0, nodes.shape[0]), indexed=nodes.shape[0],
                       progress=progress)


class PrefixIndex:
    """Candidate pairs of the exact search: query rows against the first ``indexed`` rows,
    through products with the prefix matrix's transpose, in blocks of query rows whose
    product size is bounded (so memory stays flat). A pair is a candidate when it shares a
    prefix shingle (see ``prefix_matrix``) and passes ``CandidateFilter``. When the queries
    are the indexed rows (a self-join), each pair comes once, with indexed row > query row."""

    def __init__(self, nodes: sp.csr_matrix, prefixes: sp.csr_matrix, min_threshold: float, indexed: int):
        self.prefixes, self.indexed = prefixes, indexed
        self.filter = CandidateFilter(prefixes, set_sizes(nodes), min_threshold)
        self.transposed = prefixes[:indexed].T.tocsr()

    def blocks(self, queries: tuple[int, int]) -> list[tuple[int, int]]:
        first, last = queries
        bounds = np.cumsum(self.prefixes[first:last] @ np.diff(self.transposed.indptr).astype(np.float64))
        blocks, start = [], 0
        while start < last - first:
            limit = (bounds[start - 1] if start else 0.0) + PRODUCT_BUDGET
            stop = max(start + 1, int(np.searchsorted(bounds, limit, side="right")))
            blocks.append((first + start, first + stop))
            start = stop
        return blocks

    def candidates(self, block: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """(query rows ascending, indexed rows) of one block's candidates."""
        start, stop = block
        product = (self.prefixes[start:stop] @ self.transposed).tocoo()
        rows = product.row.astype(np.int64) + start
        cols = product.col.astype(np.int64)
        shared = product.data
        if start < self.indexed:                   # queries among the indexed rows: a self-join
            upper = cols > rows
            rows, cols, shared = rows[upper], cols[upper], shared[upper]
        keep = self.filter(rows, cols, shared)
        return rows[keep], cols[keep]


def prefix_join(nodes: sp.csr_matrix, prefixes: sp.csr_matrix, min_threshold: float, *, queries: tuple[int, int],
                indexed: int, progress=None):
    """Pairs (query row q, indexed row i) with Jaccard >= min_threshold, exactly: the
    ``PrefixIndex`` candidates of each block verified by a ``Verifier``, blocks on
    parallel.WORKERS threads (scipy's sparse kernels release the GIL).
    Returns (q, i, jaccard, candidates verified)."""
    first, last = queries
    index = PrefixIndex(nodes, prefixes, min_threshold, indexed)
    blocks = index.blocks(queries)
    verifier = Verifier(nodes, min_threshold)
    candidates = 0
    for (_, stop), (light, heavy, count) in zip(blocks, thread_map(
            lambda block: verifier.verify_light(*index.candidates(block)), blocks)):
        candidates += count
        verifier.add(light, heavy)
        if progress:
            progress((stop - first) / (last - first), "verifying pairs")
    a, b, jac = verifier.result()
    return a, b, jac, candidates


def size_fits(sizes: np.ndarray, a: np.ndarray, b: np.ndarray, min_threshold: float) -> np.ndarray:
    """The size filter: J(x, y) <= min(|x|, |y|) / max(|x|, |y|)."""
    sa, sb = sizes[a], sizes[b]
    return np.minimum(sa, sb) >= min_threshold * np.maximum(sa, sb) - EPS


class CandidateFilter:
    """Cheap bounds that drop a candidate pair (x, y) before its Jaccard is computed.

    - size (``size_fits``);
    - overlap: J >= t needs |x & y| >= t / (1 + t) * (|x| + |y|). Under the global shingle
      order, every shared shingle ranked at or before the earlier of the two prefix ends
      lies in both prefixes (so it is among the ``shared`` prefix shingles the product
      counted); any other shared shingle lies in the suffix of the set whose prefix ends
      first. So |x & y| <= shared + that suffix's length (PPJoin's positional idea, at
      prefix granularity). On the 1M synthetic set at 0.3 this drops 84% of candidates."""

    def __init__(self, prefixes: sp.csr_matrix, sizes: np.ndarray, min_threshold: float):
        self.sizes = sizes
        # Rank of each prefix's last shingle (an empty row, never a candidate, gets 0).
        ends = np.maximum(prefixes.indptr[1:] - 1, 0)
        self.last = prefixes.indices[ends].astype(np.int64) if prefixes.nnz else np.zeros(ends.size, np.int64)
        self.suffix = sizes - np.diff(prefixes.indptr)
        self.t = min_threshold

    def __call__(self, x: np.ndarray, y: np.ndarray, shared: np.ndarray) -> np.ndarray:
        sx, sy = self.sizes[x], self.sizes[y]
        fits = size_fits(self.sizes, x, y, self.t)
        lx, ly = self.last[x], self.last[y]
        rest = np.where(lx < ly, self.suffix[x],
                        np.where(ly < lx, self.suffix[y], np.minimum(self.suffix[x], self.suffix[y])))
        return fits & (shared + rest >= self.t / (1 + self.t) * (sx + sy) - EPS)


DENSE_MIN_PARTNERS = 64       # a row with this many candidates in a block goes to the dense verifier
DENSE_FLUSH = 4_000_000       # candidate pairs buffered for the dense verifier
DENSE_CELLS = 32_000_000      # cells of one dense verification matrix (float32: 128 MB)
DENSE_MIN_GROUP = 10_000     # pairs in a connected group before a dense product is considered
DENSE_ADVANTAGE = 64          # a BLAS multiply-add costs about 1/64 of a sparse verification entry


class Verifier:
    """Exact Jaccard of candidate pairs, keeping those >= min_threshold.

    Most pairs go through ``verify`` (sparse row products). Rows with many candidates,
    typically thousands of long texts sharing a template, are verified together by one
    dense matrix product over the shingles those nodes share, when that costs less (on
    synth-100k its 3,000-record template's 4.5M pairs: 19.6 s of row products -> 3.9 s)."""

    def __init__(self, nodes: sp.csr_matrix, min_threshold: float):
        self.nodes, self.t = nodes, min_threshold
        self.sizes = set_sizes(nodes)
        self.out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.heavy: list[tuple[np.ndarray, np.ndarray]] = []
        self.buffered = 0

    def verify_light(self, a: np.ndarray, b: np.ndarray):
        """Split one block's pairs (a ascending): light rows are verified here (thread-safe),
        heavy rows are returned for ``add`` to buffer. Returns (light (a, b, jac) kept,
        heavy (a, b), number of pairs)."""
        partners = np.unique(a, return_counts=True)
        heavy = np.isin(a, partners[0][partners[1] >= DENSE_MIN_PARTNERS])
        la, lb = a[~heavy], b[~heavy]
        return self._kept(la, lb, verify(self.nodes, la, lb, sizes=self.sizes)), (a[heavy], b[heavy]), int(a.size)

    def add(self, light, heavy) -> None:
        """Results of ``verify_light``, in block order (main thread)."""
        self.out.append(light)
        if heavy[0].size:
            self.heavy.append(heavy)
            self.buffered += heavy[0].size
            if self.buffered >= DENSE_FLUSH:
                self._flush()

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._flush()
        cat = (lambda i, dt: np.concatenate([o[i] for o in self.out]) if self.out else np.zeros(0, dt))
        return cat(0, np.int64), cat(1, np.int64), cat(2, np.float64)

    def _kept(self, a, b, jac) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keep = jac >= self.t - EPS
        return a[keep], b[keep], jac[keep]

    def _flush(self) -> None:
        """Verify the buffered pairs of heavy rows: each connected group of them (a template's
        copies, say) through ``verify_dense``, which picks dense or sparse by cost."""
        if not self.heavy:
            return
        a = np.concatenate([h[0] for h in self.heavy])
        b = np.concatenate([h[1] for h in self.heavy])
        self.heavy, self.buffered = [], 0
        n = self.nodes.shape[0]
        graph = sp.coo_matrix((np.ones(a.size, dtype=np.int8), (a, b)), shape=(n, n))
        group = connected_components(graph, directed=False)[1][a]
        order = np.lexsort((a, group))
        a, b, group = a[order], b[order], group[order]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        ends = np.r_[starts[1:], a.size]
        small = np.zeros(a.size, dtype=bool)
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            if hi - lo < DENSE_MIN_GROUP:           # too few pairs to pay for a dense product
                small[lo:hi] = True
                continue
            row_starts = lo + np.flatnonzero(np.r_[True, a[lo + 1:hi] != a[lo:hi - 1]])
            # Chunks of whole rows, each small enough for one dense product.
            step = max(1, DENSE_CELLS // int(np.unique(b[lo:hi]).size))
            for i in range(0, row_starts.size, step):
                clo = row_starts[i]
                chi = row_starts[i + step] if i + step < row_starts.size else hi
                self.out.append(self._kept(a[clo:chi], b[clo:chi], verify_dense(self.nodes, a[clo:chi], b[clo:chi],
                                                                               self.sizes)))
        self.out.append(self._kept(a[small], b[small], verify(self.nodes, a[small], b[small], sizes=self.sizes)))


def verify_dense(nodes: sp.csr_matrix, a: np.ndarray, b: np.ndarray, sizes: np.ndarray | None = None) -> np.ndarray:
    """Exact Jaccard of pairs (a[i], b[i]) through dense products (BLAS) over the shingles
    the nodes share, if that is cheaper than ``verify``; otherwise through ``verify``.
    Shingles are taken in slices so no dense matrix passes DENSE_CELLS."""
    sizes = set_sizes(nodes) if sizes is None else sizes
    rows, ai = np.unique(a, return_inverse=True)
    cols, bi = np.unique(b, return_inverse=True)
    members = np.union1d(rows, cols)
    sub = nodes[members]
    # A shingle held by only one of these nodes is in no intersection: leave it out.
    shingles, held_by = np.unique(sub.indices, return_counts=True)
    shared = shingles[held_by >= 2]
    dense_cost = float(rows.size) * cols.size * max(1, shared.size)
    if rows.size * cols.size > DENSE_CELLS or dense_cost > DENSE_ADVANTAGE * float((sizes[a] + sizes[b]).sum()):
        return verify(nodes, a, b, sizes=sizes)
    column = np.searchsorted(shared, sub.indices)
    hit = (column < shared.size) & (shared[np.minimum(column, shared.size - 1)] == sub.indices)
    member_row = np.repeat(np.arange(members.size), np.diff(sub.indptr))[hit]
    column = column[hit]
    row_at, col_at = np.searchsorted(members, rows), np.searchsorted(members, cols)
    # float32 sums of 0/1 are exact below 2^24; longer sets use float64.
    dtype = np.float32 if sizes.max() < 2 ** 24 else np.float64
    inter = np.zeros((rows.size, cols.size), dtype=dtype)
    width = max(1, DENSE_CELLS // members.size)
    for lo in range(0, shared.size, width):
        in_slice = (column >= lo) & (column < lo + width)
        dense = np.zeros((members.size, min(width, shared.size - lo)), dtype=dtype)
        dense[member_row[in_slice], column[in_slice] - lo] = 1
        inter += dense[row_at] @ dense[col_at].T
    counts = inter[ai.reshape(-1), bi.reshape(-1)].astype(np.float64)
    return counts / (sizes[a] + sizes[b] - counts)


def verify_candidates(nodes: sp.csr_matrix, a: np.ndarray, b: np.ndarray, min_threshold: float,
                      chunk: int = 1_000_000):
    """The pairs among candidates (a ascending) with Jaccard >= min_threshold: the size filter,
    then a ``Verifier`` (dense products for dense groups), in chunks of whole rows on threads."""
    fits = size_fits(set_sizes(nodes), a, b, min_threshold)
    a, b = a[fits], b[fits]
    verifier = Verifier(nodes, min_threshold)
    cuts = np.unique(np.r_[np.searchsorted(a, a[::chunk]), a.size]) if a.size else np.zeros(1, np.int64)
    spans = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    for light, heavy, _ in thread_map(lambda s: verifier.verify_light(a[s[0]:s[1]], b[s[0]:s[1]]), spans):
        verifier.add(light, heavy)
    return verifier.result()


def choose_bands(min_threshold: float, num_perm: int) -> tuple[int, int]:
    """The most rows per band (fewest false candidates) that still catch a pair at the
    lowest threshold with probability >= TARGET_RECALL, using at most num_perm hashes."""
    if num_perm < 2:
        raise AuditorError("usage", f"num_perm must be at least 2, got {num_perm}.", "The default is 128.")
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if 1 - (1 - min_threshold ** rows) ** bands >= TARGET_RECALL:
            best = (bands, rows)
    return best


_MASK32 = np.uint64(0xFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mul = rng.integers(1, 2 ** 63, size=num_perm, dtype=np.uint64) | np.uint64(1)
    add = rng.integers(0, 2 ** 63, size=num_perm, dtype=np.uint64)
    return mul, add


def _shingle_hashes(nodes: sp.csr_matrix, seed: int) -> np.ndarray:
    """A 64-bit hash of every (node, shingle) entry's shingle id."""
    return _splitmix64(np.arange(nodes.shape[1], dtype=np.uint64) ^ np.uint64(seed))[nodes.indices]


def minhash_signatures(nodes: sp.csr_matrix, num_perm: int, seed: int, progress=None) -> np.ndarray:
    """(n_nodes, num_perm) uint32 MinHash signatures; every node has at least one shingle.
    Permutation p maps a shingle hash h to (h * mul[p] + add[p]) >> 32 (multiply-shift
    hashing); the signature is each permutation's minimum. Computed by the compiled loop
    in ``kernels`` on parallel.WORKERS threads, in row slices."""
    from .kernels import minhash_rows

    mul, add = _permutations(num_perm, seed)
    base = _shingle_hashes(nodes, seed)
    indptr = nodes.indptr.astype(np.int64)
    n = nodes.shape[0]
    sig = np.empty((n, num_perm), dtype=np.uint32)
    slices = np.linspace(0, n, 8 * parallel.WORKERS + 1).astype(np.int64)

    def run(i: int) -> None:
        minhash_rows(base, indptr, mul, add, sig, int(slices[i]), int(slices[i + 1]))

    for done, _ in enumerate(thread_map(run, range(slices.size - 1)), 1):   # progress from this thread
        if progress:
            progress(done / (slices.size - 1), "hashing")
    return sig


def minhash_signatures_numpy(nodes: sp.csr_matrix, num_perm: int, seed: int) -> np.ndarray:
    """The same signatures in plain numpy, one pass per permutation: the reference the
    compiled loop is tested against, and the baseline in bench/."""
    mul, add = _permutations(num_perm, seed)
    base = _shingle_hashes(nodes, seed)
    starts = nodes.indptr[:-1]
    sig = np.empty((nodes.shape[0], num_perm), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for p in range(num_perm):
            sig[:, p] = np.minimum.reduceat(((base * mul[p] + add[p]) >> np.uint64(32)).astype(np.uint32), starts)
    return sig


def lsh_candidates(sig: np.ndarray, bands: int, rows: int, flush_at: int = 20_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Node pairs (a < b) that agree on at least one whole band, deduplicated.
    Candidates are deduplicated whenever the buffer passes ``flush_at`` entries, so a
    template shared by thousands of texts costs its distinct pairs once, not once per band."""
    found: list[np.ndarray] = []
    buffered = 0
    for band in range(bands):
        found.append(lsh_band_pairs(sig, band, rows))
        buffered += found[-1].size
        if buffered > flush_at:
            found = [_distinct(np.concatenate(found))]
            buffered = found[0].size
    codes = _distinct(np.concatenate(found)) if found else np.zeros(0, np.int64)
    return np.divmod(codes, np.int64(sig.shape[0]))


def lsh_band_pairs(sig: np.ndarray, band: int, rows: int) -> np.ndarray:
    """Pairs (a * n + b, a < b) of nodes whose signatures agree on the whole of ``band``."""
    chunk = np.ascontiguousarray(sig[:, band * rows:(band + 1) * rows])
    if rows <= 2:       # the band is one integer already: group on it directly (2.7x faster)
        bucket = chunk.view(np.uint64 if rows == 2 else np.uint32).reshape(-1)
    else:
        bucket = np.unique(chunk.view(np.dtype((np.void, 4 * rows))).reshape(-1), return_inverse=True)[1]
    return pairs_within_groups(bucket.reshape(-1))


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values; sort + mask is 6-9x faster than np.unique here (BENCHMARKS.md)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if values.size else values


def pairs_within_groups(labels: np.ndarray) -> np.ndarray:
    """Every pair (a < b) of items sharing a label, encoded as a * n + b."""
    n = labels.size
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    sizes = np.diff(np.r_[starts, n])
    multi = sizes > 1
    if not multi.any():
        return np.zeros(0, np.int64)
    # For item at sorted position p in a group ending at e, pair it with p+1 .. e-1.
    ends = np.repeat(starts + sizes, sizes)
    after = ends - np.arange(n) - 1
    left = np.repeat(np.arange(n), after)
    offsets = np.arange(left.size) - np.repeat(np.cumsum(after) - after, after)
    right = left + 1 + offsets
    a, b = order[left], order[right]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return lo.astype(np.int64) * n + hi


def verify(nodes: sp.csr_matrix, a: np.ndarray, b: np.ndarray, budget: int = 16_000_000, *,
           sizes: np.ndarray | None = None) -> np.ndarray:
    """Exact Jaccard of node pairs (a[i], b[i]), in chunks of at most ``budget`` set entries,
    so pairs of long texts (a shared template) cannot balloon memory. ``sizes``: the nodes'
    set sizes, when the caller has them."""
    sizes = set_sizes(nodes) if sizes is None else sizes
    out = np.empty(a.size, dtype=np.float64)
    cost = np.cumsum(sizes[a] + sizes[b])
    start = 0
    while start < a.size:
        stop = max(start + 1, int(np.searchsorted(cost, (cost[start - 1] if start else 0) + budget, side="right")))
        ia, ib = a[start:stop], b[start:stop]
        inter = np.asarray(nodes[ia].multiply(nodes[ib]).sum(axis=1)).reshape(-1)
        out[start:stop] = inter / (sizes[ia] + sizes[ib] - inter)
        start = stop
    return out


# --------------------------------------------------------------------------- across two datasets

@dataclass(frozen=True)
class CrossPairs:
    """Verified pairs (a in dataset A, b in dataset B) with Jaccard >= min_threshold."""

    a: np.ndarray
    b: np.ndarray
    jaccard: np.ndarray
    min_threshold: float
    method: str
    candidates: int
    bands: int | None = None
    rows: int | None = None


def find_cross_pairs(matrix_a: sp.csr_matrix, matrix_b: sp.csr_matrix, min_threshold: float,
                     method: str = "auto", *, num_perm: int = 128, seed: int = 1) -> CrossPairs:
    """Near duplicates between two shingle matrices built over one vocabulary (same width)."""
    n_a, n_b = matrix_a.shape[0], matrix_b.shape[0]
    if method == "auto":
        method = "exact" if n_b * n_a <= 20 * MAX_EXACT_CANDIDATES else "lsh"
    stacked = sp.vstack([matrix_a, matrix_b]).tocsr()
    if method == "exact":
        # The self-join's search with B's rows as queries against A's, over one shingle order.
        prefixes = prefix_matrix(stacked, min_threshold)
        rows_b, a, jac, candidates = prefix_join(stacked, prefixes, min_threshold, queries=(n_a, n_a + n_b),
                                                 indexed=n_a)
        b = rows_b - n_a
        bands = rows = None
        label = "exact-all-pairs"
    else:
        bands, rows = choose_bands(min_threshold, num_perm)
        index = np.flatnonzero(set_sizes(stacked) > 0)
        sig = minhash_signatures(stacked[index], bands * rows, seed)
        lo, hi = lsh_candidates(sig, bands, rows)
        lo, hi = index[lo], index[hi]
        cross = (lo < n_a) & (hi >= n_a)
        candidates = int(cross.sum())
        a, hi, jac = verify_candidates(stacked, lo[cross], hi[cross], min_threshold)
        b = hi - n_a
        label = "minhash-lsh"
    order = np.lexsort((a, b, -jac))
    return CrossPairs(a=a[order], b=b[order], jaccard=jac[order], min_threshold=min_threshold, method=label,
                      candidates=candidates, bands=bands, rows=rows)
