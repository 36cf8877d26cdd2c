"""Where verified pairs go: bounded accumulators, so memory follows records, not pairs.

The search hands over verified pairs in batches (one block of the prefix join, one dense
block of a template group). ``PairSink`` keeps, per batch:

- exact counts per score bin (``result.ScoreCounts``);
- the edges that can still matter to the maximum spanning forest. An edge (a, b, j) is
  *implied* when a and b are already joined by forest edges that all score >= j (in bins):
  leaving it out changes no component at any threshold (the cycle property). The weakest
  edge on a forest path is read off the forest's Kruskal reconstruction tree (the bin of the
  two ends' lowest common ancestor, ``kernels.implied_edges``). Buffered edges and the forest
  are merged into a new maximum spanning forest (Kruskal, via scipy) whenever the buffer
  fills, so the forest and the buffer stay O(nodes);
- the best ``STRATUM_CAP`` pairs of each 0.01-wide score stratum (the pair sample).

``CrossSink`` does the same job across two datasets: the exact pair count, and the best few
A matches of every B record.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from .result import (EPS, SCORE_SCALE, STRATA, STRATUM_CAP, CrossPairs, EstimatedCounts, Pairs, ScoreCounts,
                     score_bins, threshold_bin)

LEVEL_STEP = 0.05             # forest components kept at every 0.05: the implied-edge test's quick path
BUFFER_MIN = 2_000_000        # edges buffered before the forest is rebuilt (or nodes / 2 if more)
COUNT_FLUSH = 1 << 20         # score bins buffered before they are added to the counts
CROSS_BUFFER = 1 << 18        # cross pairs buffered at least before a CrossSink keeps each B row's best
COMPACT_EDGES = 1 << 18       # buffered edges merged into the forest and the sample at a time (or nodes)
COMPILED_FOREST = 1 << 18     # edges from which the spanning forest is Kruskal's compiled loop, not scipy's


class PairSink:
    """Exact counts, a maximum spanning forest and a stratified sample of the verified pairs."""

    def __init__(self, weight: np.ndarray, min_threshold: float, multiplicity: np.ndarray | None = None):
        self.weight = np.asarray(weight, dtype=np.int64)
        self.n = int(self.weight.size)
        # ``multiplicity``: how many nodes each row stands for (a class of nodes, ``classes``), so
        # node_hist counts node pairs; None: one each.
        self.multiplicity = None if multiplicity is None else np.asarray(multiplicity, dtype=np.int64)
        self.unit = bool((self.n == 0 or self.weight.max() == 1) and self.multiplicity is None)
        self.base = threshold_bin(min_threshold)
        size = SCORE_SCALE - self.base + 2
        self.node_hist = np.zeros(size, np.int64)
        self.record_hist = self.node_hist if self.unit else np.zeros(size, np.int64)
        self.pending: list[tuple[np.ndarray, np.ndarray | None]] = []
        self.pending_size = 0
        self.tree = None                              # the forest's reconstruction tree, once built
        levels = np.round(np.arange(1.0, min_threshold - EPS, -LEVEL_STEP), 6)
        self.level_bins = np.array([threshold_bin(x) for x in levels[::-1]], np.int64)   # ascending
        self.forest = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
        self.sample = self.forest
        # Each full stratum's worst kept pair (score, a, b); score -1 while the stratum has room.
        self.floor_j = np.full(STRATA + 1, -1.0)
        self.floor_a = np.zeros(STRATA + 1, np.int64)
        self.floor_b = np.zeros(STRATA + 1, np.int64)
        self.complete = True
        self.buffer: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.buffered = 0
        self.limit = max(BUFFER_MIN, self.n // 2)
        self.sampled = None                           # (rate, skipped, node, record, record^2 sums per bin)
        self.row_sampled = None                       # (rate, uncounted, node, record per bin, squares per level)

    # ------------------------------------------------------------------ intake

    def add(self, a: np.ndarray, b: np.ndarray, j: np.ndarray, *, counted: bool = False, sample: bool = True) -> None:
        """Verified node pairs (a < b, every j >= the minimum threshold), each offered to the
        counts and the sample once. ``counted``: the caller already counted them
        (``add_counts``); ``sample=False``: forest candidates only (offered again later)."""
        if not a.size:
            return
        if not counted:
            self._count(a, b, j)
        sampled = self._may_sample(a, b, j) if sample else np.zeros(a.size, bool)
        # A sampled edge still goes to the forest only if it is not implied: the sample is kept
        # apart, so the forest's rebuild sorts just the edges that can change it.
        spanning = ~self._implied(a, b, score_bins(j))
        keep = sampled | spanning
        if keep.any():
            self.buffer.append((a[keep].astype(np.int64), b[keep].astype(np.int64), j[keep].astype(np.float64),
                                sampled[keep], spanning[keep]))
            self.buffered += int(keep.sum())
            if self.buffered >= self.limit:
                self.compact()
                self.index_forest()

    def add_sampled(self, a: np.ndarray, b: np.ndarray, j: np.ndarray, rate: float, skipped: int) -> None:
        """Verified pairs of a seeded sample at ``rate`` standing for candidates that were not
        verified (the forest implied them: they only count), and how many were ``skipped``."""
        if self.sampled is None:
            size = self.node_hist.size
            self.sampled = [rate, 0, np.zeros(size), np.zeros(size), np.zeros(size), 0, 0.0]
        state = self.sampled
        state[1] += int(skipped)
        if not a.size:
            return
        bins = score_bins(j) - self.base
        y = (self.weight[a] * self.weight[b]).astype(np.float64)
        m = (np.ones(a.size) if self.multiplicity is None
             else (self.multiplicity[a] * self.multiplicity[b]).astype(np.float64))
        state[2] += np.bincount(bins, weights=m, minlength=state[2].size)
        state[3] += np.bincount(bins, weights=y, minlength=state[3].size)
        state[4] += np.bincount(bins, weights=y * y, minlength=state[4].size)
        state[5] += int(a.size)
        state[6] += float(y.sum())

    def add_row_sample(self, node_hist: np.ndarray, record_hist: np.ndarray, node_sq: np.ndarray,
                       record_sq: np.ndarray, rate: float, uncounted: int, cut: int) -> None:
        """Counts of a dense group's sampled rows at ``rate`` (``dense.process`` past the budget),
        over the same bins as ``node_hist``, with the sum over those rows of the square of each
        row's pairs at or above every 0.01 level, and how many of the group's pairs were left
        ``uncounted`` (scored for the forest only). Pairs at or above bin ``cut`` were counted
        exactly (``add_counts``); above the highest cut of all groups nothing is estimated."""
        if self.row_sampled is None:
            size = self.node_hist.size
            self.row_sampled = [rate, 0, np.zeros(size, np.int64), np.zeros(size, np.int64),
                                np.zeros(node_sq.size), np.zeros(record_sq.size), cut]
        state = self.row_sampled
        if state[0] != rate:
            raise ValueError("every dense group past the budget samples its rows at one rate")
        state[1] += int(uncounted)
        state[2] += node_hist
        state[3] += record_hist
        state[4] += node_sq
        state[5] += record_sq
        state[6] = max(state[6], cut)

    def implied(self, a: np.ndarray, b: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Pairs whose ends the current forest joins by edges all scoring at least ``j`` (a pair
        below such a bound can change no component)."""
        return self._implied(a, b, score_bins(j))

    def add_counts(self, node_hist: np.ndarray, record_hist: np.ndarray | None) -> None:
        """Counts made elsewhere (the dense kernel), over the same bins as ``node_hist``."""
        self.node_hist += node_hist
        if not self.unit:
            self.record_hist += record_hist

    def _count(self, a, b, j) -> None:
        self.pending.append((score_bins(j) - self.base, None if self.unit else self.weight[a] * self.weight[b],
                             None if self.multiplicity is None else self.multiplicity[a] * self.multiplicity[b]))
        self.pending_size += a.size
        if self.pending_size >= COUNT_FLUSH:
            self._flush_counts()

    def _flush_counts(self) -> None:
        if not self.pending:
            return
        bins = np.concatenate([p[0] for p in self.pending])
        if self.multiplicity is None:
            self.node_hist += np.bincount(bins, minlength=self.node_hist.size)
        else:
            m = np.concatenate([p[2] for p in self.pending]).astype(np.float64)     # exact below 2^53
            self.node_hist += np.rint(np.bincount(bins, weights=m, minlength=self.node_hist.size)).astype(np.int64)
        if not self.unit:
            w = np.concatenate([p[1] for p in self.pending]).astype(np.float64)   # exact below 2^53
            self.record_hist += np.rint(np.bincount(bins, weights=w, minlength=self.node_hist.size)).astype(np.int64)
        self.pending, self.pending_size = [], 0

    def _may_sample(self, a, b, j) -> np.ndarray:
        """Pairs that would rank before their stratum's worst kept pair (score desc, then a, b)."""
        s = stratum_of(j)
        fj, fa, fb = self.floor_j[s], self.floor_a[s], self.floor_b[s]
        return (fj < 0) | (j > fj) | ((j == fj) & ((a < fa) | ((a == fa) & (b < fb))))

    def _implied(self, a: np.ndarray, b: np.ndarray, bins: np.ndarray) -> np.ndarray:
        """Edges whose ends the forest already joins by edges that all score at least as high."""
        out = np.zeros(a.size, bool)
        if self.tree is not None:
            from ..kernels import implied_edges
            implied_edges(*self.tree, a.astype(np.int64), b.astype(np.int64), bins, out)
        return out

    # ------------------------------------------------------------------ compaction

    def compact(self) -> None:
        """Merge the buffer into the forest and the sample, a run of its batches at a time (at
        least COMPACT_EDGES edges, or the nodes: a rebuild costs a pass over them), each batch
        dropped once merged. Edges in one total order (score desc, then offered first) have one
        maximum spanning forest, reached as well by merging them in turns (the cycle property), and
        the best pairs of each stratum are those of the turns' best: the result is the same as one
        merge of everything, whose sorts and graph held about 100 bytes an edge at once (1.45M
        edges of edited copies: 124 MB above the search)."""
        parts, self.buffer, self.buffered = self.buffer, [], 0
        parts.reverse()                          # taken from the end, in the order offered
        while parts:
            turn, size = [], 0
            while parts and (not turn or size + parts[-1][0].size <= max(COMPACT_EDGES, self.n)):
                turn.append(parts.pop())
                size += turn[-1][0].size
            forest = [np.concatenate([self.forest[i]] + [x[i][x[4]] for x in turn]) for i in range(3)]
            self.forest = maximum_spanning_forest(self.n, *forest)
            del forest
            sample = [np.concatenate([self.sample[i]] + [x[i][x[3]] for x in turn]) for i in range(3)]
            del turn
            self._resample(*sample)

    def index_forest(self) -> None:
        """Build the implied-edge test over the current forest (after a compaction): its
        reconstruction tree, and its components at every LEVEL_STEP for a quick answer."""
        from ..kernels import kruskal_tree
        self.tree = None             # the last forest's index goes before this one is built (as large)
        fa, fb, fj = self.forest
        fbins = score_bins(fj)
        comp = np.empty((self.level_bins.size, self.n), np.int32)
        label = np.arange(self.n, dtype=np.int32)
        for i in range(self.level_bins.size - 1, -1, -1):        # highest level first
            k = int(np.searchsorted(-fbins, -self.level_bins[i], side="right"))   # forest: score desc
            if k:
                g = sp.coo_matrix((np.ones(k, np.int8), (fa[:k], fb[:k])), shape=(self.n, self.n))
                label = connected_components(g, directed=False)[1].astype(np.int32)
            comp[i] = label
        self.tree = (*kruskal_tree(self.n, fa, fb, fbins), self.level_bins, comp)

    def _resample(self, a, b, j) -> None:
        """Keep the best STRATUM_CAP pairs of each stratum (``best_per_stratum``). Only a stratum
        that had to drop pairs gets a floor (its worst kept pair), so a pair is refused on arrival
        only where the sample is already known to be incomplete."""
        a, b, j, over = best_per_stratum(a, b, j)
        self.sample = (a, b, j)
        if over.any():
            self.complete = False
        # Worst kept pair per overflowed stratum: the last of that stratum in sample order.
        if j.size:
            stratum = stratum_of(j)
            ends = np.r_[np.flatnonzero(stratum[1:] != stratum[:-1]), j.size - 1]
            ends = ends[over[stratum[ends]]]
            self.floor_j[stratum[ends]] = j[ends]
            self.floor_a[stratum[ends]] = a[ends]
            self.floor_b[stratum[ends]] = b[ends]

    def set_sample(self, a: np.ndarray, b: np.ndarray, j: np.ndarray, complete: bool) -> None:
        """A pair sample chosen elsewhere (``SampleFold``: the pieces' samples folded as they came),
        in place of offering its pairs here: they are all implied by the forest already."""
        self.sample = (a, b, j)
        self.complete = self.complete and complete

    # ------------------------------------------------------------------ result

    def result(self, **fields) -> Pairs:
        self._flush_counts()
        self.compact()
        listed = self.complete and self.sampled is None and self.row_sampled is None   # counted-only pairs
        # (and uncounted rows' pairs) are not in the sample
        if self.sampled is not None and self.sampled[1] == 0:
            # Every implied candidate happened to be in the sample: its pairs are the exact count.
            self.node_hist += np.rint(self.sampled[2]).astype(np.int64)
            if not self.unit:
                self.record_hist += np.rint(self.sampled[3]).astype(np.int64)
            self.sampled = None
        nz = np.flatnonzero(self.node_hist)
        counts = ScoreCounts(bins=nz + self.base, node_pairs=self.node_hist[nz], record_pairs=self.record_hist[nz])
        fa, fb, fj = self.forest
        sa, sb, sj = self.sample
        estimate = None
        if self.sampled is not None:
            rate, skipped, node_sum, record_sum, record_sq, hits, total = self.sampled
            at = np.flatnonzero(record_sum)
            estimate = EstimatedCounts(rate=rate, skipped=skipped, bins=at + self.base, node_sum=node_sum[at],
                                       record_sum=record_sum[at], record_sq=record_sq[at],
                                       unit=total / hits if hits else (float(self.weight.mean()) if self.n else 1.0))
        if self.row_sampled is not None:
            rate, uncounted, node_rows, record_rows, node_sq, record_sq, cut = self.row_sampled
            at = np.flatnonzero(node_rows)
            rows = dict(row_rate=rate, uncounted=uncounted, row_cut=cut, row_bins=at + self.base,
                        row_node=node_rows[at],
                        row_record=record_rows[at], row_node_sq=node_sq, row_record_sq=record_sq)
            if estimate is None:
                z = np.zeros(0, np.int64)
                estimate = EstimatedCounts(rate=rate, skipped=0, bins=z, node_sum=z, record_sum=z, record_sq=z,
                                           **rows)
            else:
                estimate = dataclasses.replace(estimate, **rows)
        return Pairs(a=sa, b=sb, jaccard=sj, forest_a=fa, forest_b=fb, forest_jaccard=fj, counts=counts,
                     complete=listed, weight=self.weight, estimate=estimate, **fields)


def best_first(a: np.ndarray, b: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The order of pairs (a, b, j) in the sample's order: j descending, then a, then b. The same
    as ``np.lexsort((b, a, -j))`` (both stable), by two stable sorts, the first on (a, b) packed
    into one integer (node numbers are below 2**31): 0.6x its time on millions of pairs."""
    if not a.size:
        return np.zeros(0, np.int64)
    packed = a.astype(np.int64) * (int(b.max()) + 1) + b
    order = np.argsort(packed, kind="stable")
    return order[np.argsort(-j[order], kind="stable")]


def stratum_of(j: np.ndarray) -> np.ndarray:
    """The 0.01-wide score stratum of each Jaccard (1.0 its own)."""
    return np.minimum(np.floor(j * STRATA + EPS).astype(np.int64), STRATA)


def best_per_stratum(a: np.ndarray, b: np.ndarray, j: np.ndarray):
    """The best STRATUM_CAP pairs of each stratum, in sample order (``best_first``), and which
    strata had to drop pairs (a bool per stratum)."""
    order = best_first(a, b, j)
    a, b, j = a[order], b[order], j[order]
    stratum = stratum_of(j)
    keep = rank_in_runs(stratum) < STRATUM_CAP
    over = np.zeros(STRATA + 1, bool)
    over[stratum[~keep]] = True
    return a[keep], b[keep], j[keep], over


class SampleFold:
    """The pair sample of pairs offered in any order, each once: the order it keeps (jaccard
    desc, then a, b) is total, so the result does not depend on the order offered. Pairs wait
    until they number BUFFER_MIN, or twice the sample, then are folded into it; so it holds the
    sample, at most that many waiting and the piece being offered."""

    def __init__(self):
        self.parts: list = []
        self.held = 0
        self.kept = 0                  # pairs in the sample after the last fold
        self.complete = True

    def add(self, a: np.ndarray, b: np.ndarray, j: np.ndarray, complete: bool = True) -> None:
        self.complete = self.complete and complete
        if a.size:
            self.parts.append((a.astype(np.int64), b.astype(np.int64), j.astype(np.float64)))
            self.held += a.size
            if self.held - self.kept >= max(BUFFER_MIN, self.kept):
                self._fold()

    def _fold(self) -> None:
        a, b, j, over = best_per_stratum(*(np.concatenate([p[i] for p in self.parts]) for i in range(3)))
        self.parts, self.held, self.kept = [(a, b, j)], a.size, a.size
        self.complete = self.complete and not over.any()

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """(a, b, jaccard) in sample order, and whether no stratum had to drop pairs."""
        if not self.parts:
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros(0, np.float64), self.complete
        self._fold()
        return (*self.parts[0], self.complete)


def rank_in_runs(keys: np.ndarray) -> np.ndarray:
    """Each item's position within its run of equal ``keys`` (keys sorted, so runs are groups)."""
    if not keys.size:
        return np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return np.arange(keys.size) - np.repeat(starts, np.diff(np.r_[starts, keys.size]))


def maximum_spanning_forest(n: int, a: np.ndarray, b: np.ndarray, j: np.ndarray):
    """A maximum spanning forest of the edges (a, b, j), as (a, b, j) sorted by j desc. Ties
    go to the earlier edge, so the same edges in the same order give the same forest. A pair
    has one score wherever it is offered (every path computes it from the same integer counts),
    which the two ways below rely on when a pair comes twice."""
    if not a.size:
        return a, b, j
    if a.size >= COMPILED_FOREST:
        # Kruskal's own loop over the edges by score (compiled): about 17 bytes an edge, where
        # scipy's tree and the deduplication below held about 100 (the compaction's peak on
        # edited copies: a turn is as many edges as nodes). A pair offered twice (with one score)
        # is picked once, at its first place, as below.
        from ..kernels import kruskal_forest
        order = np.argsort(-j, kind="stable")
        picked = np.zeros(a.size, bool)
        kruskal_forest(n, a.astype(np.int64, copy=False), b.astype(np.int64, copy=False), order, picked)
        edge = order[picked]
        return a[edge], b[edge], j[edge]
    # A pair offered twice (a forest seed, then again for the sample) counts once.
    _, first = np.unique(a * np.int64(n) + b, return_index=True)
    if first.size < a.size:
        first = np.sort(first)
        a, b, j = a[first], b[first], j[first]
    order = np.argsort(-j, kind="stable")
    rank = np.empty(a.size, np.float64)
    rank[order] = np.arange(1, a.size + 1)          # Kruskal on ranks: no float ties, no zeros
    tree = minimum_spanning_tree(sp.csr_matrix((rank, (a, b)), shape=(n, n))).tocoo()
    picked = np.sort(tree.data.astype(np.int64) - 1)
    edge = order[picked]
    return a[edge], b[edge], j[edge]


class CrossSink:
    """Cross-dataset pairs: the exact count, and each B record's best ``per_b`` A matches."""

    def __init__(self, per_b: int):
        self.per_b = per_b
        self.pairs = 0
        self.kept = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
        self.buffer: list = []
        self.buffered = 0

    def add(self, a: np.ndarray, b: np.ndarray, j: np.ndarray, **_) -> None:
        self.pairs += int(a.size)
        if a.size:
            self.buffer.append((a.astype(np.int64), b.astype(np.int64), j.astype(np.float64)))
            self.buffered += a.size
            # Compacted once the buffer is as large as what is kept (each pair is then sorted a
            # few times at most), and not before CROSS_BUFFER pairs: the forest's 2M-edge buffer
            # held here cost 150 MB at each compaction, whatever B's size.
            if self.buffered >= max(CROSS_BUFFER, self.kept[0].size):
                self.compact()

    def compact(self) -> None:
        """Keeps each B row's best ``per_b`` (containment or Jaccard desc, then A row): a total
        order, so when the buffer is compacted does not change what is kept."""
        if not self.buffer:
            return
        a, b, j = (np.concatenate([self.kept[i]] + [x[i] for x in self.buffer]) for i in range(3))
        self.buffer, self.buffered = [], 0
        order = np.lexsort((a, -j, b))
        a, b, j = a[order], b[order], j[order]
        keep = rank_in_runs(b) < self.per_b
        self.kept = (a[keep], b[keep], j[keep])

    def result(self, **fields) -> CrossPairs:
        self.compact()
        a, b, j = self.kept
        order = np.lexsort((a, b, -j))
        return CrossPairs(a=a[order], b=b[order], jaccard=j[order], pairs=self.pairs, per_b=self.per_b, **fields)
