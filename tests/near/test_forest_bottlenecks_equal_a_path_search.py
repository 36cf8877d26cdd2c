"""The forest's implied-edge test (``kernels.kruskal_tree``, ``bottleneck_bins``, ``implied_edges``)
gives what a search along the forest's paths gives: the weakest edge between two nodes, and
whether it scores at least an edge's bin. Forests of clusters, a long chain (a node as deep as
the forest has edges: the binary-lifting table needs as many levels as the deepest node) and a
star. From issue 34, item 2 (memory per byte read): the table is as deep as the deepest node,
not as the tree is large (edited copies of questions: 9 levels where 21 were held)."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from auditor.kernels import bottleneck_bins, implied_edges, kruskal_tree


def path_bottleneck(n: int, fa, fb, fbins, u: int, v: int) -> int:
    """The weakest bin on the forest path u..v (-1: not joined), by a depth-first search."""
    adjacent = defaultdict(list)
    for a, b, w in zip(fa.tolist(), fb.tolist(), fbins.tolist()):
        adjacent[a].append((b, w))
        adjacent[b].append((a, w))
    if u == v:
        return np.iinfo(np.int64).max
    stack, seen = [(u, np.iinfo(np.int64).max)], {u}
    while stack:
        x, weakest = stack.pop()
        for y, w in adjacent[x]:
            if y not in seen:
                if y == v:
                    return min(weakest, w)
                seen.add(y)
                stack.append((y, min(weakest, w)))
    return -1


def components(n: int, fa, fb, fbins, level: int) -> np.ndarray:
    """A label per node: nodes joined by forest edges of bin >= level share one."""
    label = np.arange(n)
    for a, b, w in zip(fa.tolist(), fb.tolist(), fbins.tolist()):
        if w >= level:
            label[label == label[b]] = label[a]
    return label


def forest(shape: str, n: int, rng) -> tuple:
    """(a, b, bin) of a forest over n nodes, sorted by bin descending (as the sink holds it)."""
    if shape == "chain":
        a, b = np.arange(n - 1), np.arange(1, n)
    elif shape == "star":
        a, b = np.zeros(n - 1, np.int64), np.arange(1, n)
    else:                        # clusters: random trees over random groups, some nodes alone
        group = rng.integers(0, n // 8, n)
        a, b = [], []
        for g in np.unique(group):
            members = rng.permutation(np.flatnonzero(group == g))
            for k in range(1, members.size):
                a.append(members[int(rng.integers(0, k))])
                b.append(members[k])
        a, b = np.array(a, np.int64), np.array(b, np.int64)
    bins = rng.integers(3000, 10001, a.size)
    order = np.argsort(-bins, kind="stable")
    return a[order].astype(np.int64), b[order].astype(np.int64), bins[order].astype(np.int64)


@pytest.mark.parametrize("shape", ["clusters", "chain", "star"])
def test_forest_bottlenecks_equal_a_path_search(shape):
    rng = np.random.default_rng(7)
    n = 300
    fa, fb, fbins = forest(shape, n, rng)
    up, depth, node_bin, roots = kruskal_tree(n, fa, fb, fbins)
    if shape == "chain":         # the deepest case: the table still reaches every ancestor
        assert up.shape[1] >= int(np.ceil(np.log2(depth.max() + 1)))
    component = components(n, fa, fb, fbins, 0)
    u = rng.integers(0, n, 2_000).astype(np.int64)
    v = rng.integers(0, n, 2_000).astype(np.int64)
    for i in range(0, u.size, 2):           # half the pairs within one tree
        v[i] = rng.choice(np.flatnonzero(component == component[u[i]]))
    got = np.empty(u.size, np.int64)
    bottleneck_bins(up, depth, node_bin, roots, u, v, got)
    want = np.array([path_bottleneck(n, fa, fb, fbins, x, y) for x, y in zip(u.tolist(), v.tolist())])
    assert np.array_equal(got, want)
    assert (want >= 0).sum() > 500 and (shape != "clusters" or (want == -1).sum() > 500)   # joined and apart
    # The implied-edge test, with and without the grid of levels' components.
    asked = rng.integers(3000, 10001, u.size).astype(np.int64)
    level_bins = np.array([5000, 7000, 9000], np.int64)
    level_comp = np.empty((level_bins.size, n), np.int32)
    for i, level in enumerate(level_bins.tolist()):
        level_comp[i] = components(n, fa, fb, fbins, level)
    out = np.zeros(u.size, bool)
    implied_edges(up, depth, node_bin, roots, level_bins, level_comp, u, v, asked, out)
    assert np.array_equal(out, (want >= asked) & (want != -1))
