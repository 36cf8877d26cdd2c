"""Classes of nodes that only their private shingles tell apart.

A shingle held by one node (a *private* shingle: a unique id, a swapped word, an edit) never
makes a pair, so what decides a node's Jaccard with any other node is its *shared* shingles and
how many private ones it has. Nodes equal on both form a *class*: 50,000 copies of a notice
that differ only in an id word are one class, whatever their ids. For nodes x, y of one class
with shared set S and e private shingles each, J(x, y) = |S| / (|S| + 2e) (the class's *self
Jaccard*), and every node z outside it has the same Jaccard with each member (z shares none of
their private shingles). So the search runs over one representative per class (its first node,
with its own private shingles, so every Jaccard it computes is a true one), and ``expand`` turns
its result back into node pairs, exactly:

- counts: a class pair (A, B) at j is |A| x |B| node pairs at j (the sink multiplies by class
  sizes), and each class adds its own |A| (|A| - 1) / 2 pairs at its self Jaccard;
- forest: two members of A are joined at s(A) = max(self Jaccard, best class edge of A) (through
  any neighbour class every member scores alike), so a star from A's representative at s(A)
  plus the class forest's edges between representatives gives the node graph's components at
  every threshold;
- sample: each sampled class pair expands to its first node pairs in (a, b) order.

When no two nodes share a class (most real sets), nothing changes: ``node_classes`` returns None.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..shingles import row_counts, row_hash_sums, set_sizes, shared_columns
from .result import EPS, STRATA, STRATUM_CAP, Pairs, ScoreCounts, score_bins
from .sink import best_per_stratum, maximum_spanning_forest, stratum_of

MIN_SAVING = 1 / 8           # classes are used when they remove at least this share of the nodes


@dataclass(frozen=True)
class NodeClasses:
    class_of: np.ndarray      # (n_nodes,) class id, classes numbered by first node
    rep: np.ndarray           # (n_classes,) the class's first node
    count: np.ndarray         # nodes per class
    weight: np.ndarray        # records per class
    square: np.ndarray        # sum of its nodes' squared weights (record pairs inside nodes)
    self_jaccard: np.ndarray  # |S| / (|S| + 2e): the Jaccard of two members (1.0 for a single node)

    @property
    def n_classes(self) -> int:
        return int(self.rep.size)


def node_classes(nodes: sp.csr_matrix, weight: np.ndarray, min_saving: float = MIN_SAVING) -> NodeClasses | None:
    """The nodes' classes, or None when they would save less than ``min_saving`` of the nodes."""
    n = nodes.shape[0]
    if n < 2 or not nodes.nnz:
        return None
    # An entry is shared when its column is held by two nodes or more (a byte an entry).
    held_twice = np.zeros(nodes.shape[1], bool)
    held_twice[shared_columns(nodes)[0]] = True
    shared = held_twice[nodes.indices]
    del held_twice
    shared_size = row_counts(nodes.indptr, shared)
    private = set_sizes(nodes) - shared_size
    # The shared set's 128-bit order-free hash (as collapse_identical's), with its size and the
    # private count: equal keys, equal class. Sums wrap modulo 2^64, as collapse_identical's.
    key1 = row_hash_sums(nodes, 0xC1A55, where=shared)
    # Nodes of one class have one key1, so too many distinct key1 rule classes out: most sets end
    # here, before the second hash and the sort of every node's keys.
    if n - np.unique(key1).size < min_saving * n:
        return None
    key2 = row_hash_sums(nodes, 0xC1A552, where=shared)
    del shared
    order = np.lexsort((private, shared_size, key2, key1))     # stable: equal keys in node order
    # Each key compared in sorted order one at a time (a copy of one held, not of all four).
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    for key in (key1, key2, shared_size, private):
        ordered = key[order]
        starts[1:] |= ordered[1:] != ordered[:-1]
        del ordered
    del key1, key2
    n_classes = int(starts.sum())
    if n - n_classes < min_saving * n:
        return None
    label = np.empty(n, np.int64)
    label[order] = np.cumsum(starts) - 1
    first = order[starts]                                   # the first node of each
    del order, starts
    rank = np.empty(n_classes, np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(n_classes)
    class_of = rank[label]
    rep = np.sort(first)
    w = np.asarray(weight, np.int64)
    s, e = shared_size[rep].astype(np.float64), private[rep].astype(np.float64)
    count = np.bincount(class_of, minlength=n_classes).astype(np.int64)
    self_j = np.where(count > 1, s / np.maximum(s + 2 * e, 1), 1.0)
    return NodeClasses(class_of=class_of, rep=rep, count=count,
                       weight=np.bincount(class_of, weights=w, minlength=n_classes).astype(np.int64),
                       square=np.bincount(class_of, weights=w * w, minlength=n_classes).astype(np.int64),
                       self_jaccard=self_j)


def members(classes: NodeClasses) -> tuple[np.ndarray, np.ndarray]:
    """(nodes sorted by class then id, start of each class in it)."""
    order = np.argsort(classes.class_of, kind="stable")
    return order, np.concatenate(([0], np.cumsum(classes.count)))


def expand(class_pairs: Pairs, classes: NodeClasses, *, n_records: int, node_of: np.ndarray,
           weight: np.ndarray, min_threshold: float, **fields) -> Pairs:
    """The node-level ``Pairs`` of a search over class representatives (see the module docstring)."""
    n_nodes = int(classes.class_of.size)
    multi = np.flatnonzero(classes.count > 1)
    self_j = classes.self_jaccard
    inside = multi[self_j[multi] >= min_threshold - EPS]
    # Counts: the class pairs' (already multiplied by class sizes) and each class's own pairs.
    cnt = class_pairs.counts
    m, w = classes.count[inside], classes.weight[inside]
    bins = np.concatenate([cnt.bins, score_bins(self_j[inside])])
    node_p = np.concatenate([cnt.node_pairs, m * (m - 1) // 2])
    record_p = np.concatenate([cnt.record_pairs, (w * w - classes.square[inside]) // 2])
    uniq, at = np.unique(bins, return_inverse=True)
    counts = ScoreCounts(bins=uniq, node_pairs=np.bincount(at, weights=node_p).astype(np.int64),
                         record_pairs=_exact_sum(at, record_p, uniq.size))
    # Forest: stars inside classes at s(A), the class forest between representatives.
    fa, fb, fj = class_pairs.forest_a, class_pairs.forest_b, class_pairs.forest_jaccard
    strength = np.full(classes.n_classes, -1.0)
    strength[inside] = self_j[inside]
    np.maximum.at(strength, fa, fj)
    np.maximum.at(strength, fb, fj)
    node = np.arange(n_nodes)
    rep_of = classes.rep[classes.class_of]
    star = (node != rep_of) & (strength[classes.class_of] >= min_threshold - EPS)
    a = np.concatenate([classes.rep[fa], rep_of[star]])
    b = np.concatenate([classes.rep[fb], node[star]])
    j = np.concatenate([fj, strength[classes.class_of[star]]])
    forest = maximum_spanning_forest(n_nodes, np.minimum(a, b), np.maximum(a, b), j)
    sa, sb, sj, complete = _expand_sample(class_pairs, classes, inside)
    return Pairs(n_records=n_records, node_of=node_of, weight=weight, a=sa, b=sb, jaccard=sj,
                 forest_a=forest[0], forest_b=forest[1], forest_jaccard=forest[2], counts=counts,
                 complete=complete and class_pairs.complete, min_threshold=min_threshold,
                 estimate=class_pairs.estimate, **fields)


def _exact_sum(at: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, np.int64)
    np.add.at(out, at, values.astype(np.int64))
    return out


def _expand_sample(class_pairs: Pairs, classes: NodeClasses, inside: np.ndarray):
    """Node pairs for the pair sample: each sampled class pair's first node pairs, and each
    class's own first pairs, the best STRATUM_CAP per 0.01 stratum kept."""
    order, starts = members(classes)
    sa, sb, sj = class_pairs.a, class_pairs.b, class_pairs.jaccard
    plain = (classes.count[sa] == 1) & (classes.count[sb] == 1)
    parts_a = [classes.rep[sa[plain]]]
    parts_b = [classes.rep[sb[plain]]]
    parts_j = [sj[plain]]
    taken = np.bincount(stratum_of(sj[plain]), minlength=STRATA + 1)
    complete = True
    # Pairs inside a class first (their self Jaccard), then class pairs with a class of several
    # nodes, best first; a stratum stops taking once it holds STRATUM_CAP.
    jobs = [(float(classes.self_jaccard[c]), int(c), -1) for c in inside]
    wide = np.flatnonzero(~plain)
    jobs += [(float(sj[i]), int(sa[i]), int(sb[i])) for i in wide]
    jobs.sort(key=lambda x: (-x[0], x[1], x[2]))
    for jv, ca, cb in jobs:
        s = int(stratum_of(jv))
        if taken[s] >= STRATUM_CAP:
            complete = False
            continue
        xa = order[starts[ca]:starts[ca + 1]]
        xb = None if cb < 0 else order[starts[cb]:starts[cb + 1]]
        a, b, cut = first_pairs(xa, xb, STRATUM_CAP)
        complete &= not cut
        parts_a.append(a)
        parts_b.append(b)
        parts_j.append(np.full(a.size, jv))
        taken[s] += a.size
    a, b, j, over = best_per_stratum(np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(parts_j))
    return a, b, j, complete and not over.any()


def first_pairs(xa: np.ndarray, xb: np.ndarray | None, limit: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """The first ``limit`` node pairs (a < b) in (a, b) order among the pairs inside ``xa``
    (``xb`` None) or between ``xa`` and ``xb`` (sorted, disjoint), and whether any were left."""
    if xb is None:
        both, side = xa, np.zeros(xa.size, np.int8)
    else:
        both = np.concatenate([xa, xb])
        side = np.concatenate([np.zeros(xa.size, np.int8), np.ones(xb.size, np.int8)])
        o = np.argsort(both, kind="stable")
        both, side = both[o], side[o]
    positions = [np.flatnonzero(side == 0), np.flatnonzero(side == 1)]
    out_a, out_b = [], []
    left = limit
    for p in range(both.size):
        if xb is None:
            rest = both[p + 1:p + 1 + left]
        else:
            other = positions[1 - side[p]]
            at = int(np.searchsorted(other, p, side="right"))
            rest = both[other[at:at + left]]
        if rest.size:
            out_a.append(np.full(rest.size, both[p]))
            out_b.append(rest)
            left -= rest.size
        if not left:
            break
    if not out_a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), False
    a, b = np.concatenate(out_a).astype(np.int64), np.concatenate(out_b).astype(np.int64)
    total = both.size * (both.size - 1) // 2 if xb is None else xa.size * xb.size
    return a, b, bool(total > a.size)
