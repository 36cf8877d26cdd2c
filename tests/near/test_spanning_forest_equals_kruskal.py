"""The pair sink's maximum spanning forest (``sink.maximum_spanning_forest``), by scipy's tree or
by the compiled Kruskal loop taken past COMPILED_FOREST edges, equals Kruskal's algorithm written
in Python: edges by score descending, ties to the one offered first, a pair offered twice counted
once. From issue 34, item 2 (memory per byte read): the compaction's scipy tree held about 100
bytes an edge, the peak of a scan of 250 MB of edited copies."""
from __future__ import annotations

import numpy as np
import pytest

from ground_truth import root
from auditor.near import sink


def python_kruskal(n: int, a, b, j) -> list:
    parent = list(range(n))
    picked = []
    for k in sorted(range(len(a)), key=lambda k: (-j[k], k)):
        ru, rv = root(parent, a[k]), root(parent, b[k])
        if ru != rv:
            parent[rv] = ru
            picked.append((a[k], b[k], j[k]))
    return picked


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spanning_forest_equals_kruskal(monkeypatch, compiled, seed):
    monkeypatch.setattr(sink, "COMPILED_FOREST", 0 if compiled else 10 ** 12)
    rng = np.random.default_rng(seed)
    n, m = 400, 3_000
    a = rng.integers(0, n - 1, m)
    b = a + 1 + rng.integers(0, n - 1 - a)                 # a < b
    _, first = np.unique(a * n + b, return_index=True)      # a pair has one score: drawn once ...
    a, b = a[np.sort(first)], b[np.sort(first)]
    j = rng.integers(30, 101, a.size) / 100                # many ties
    again = rng.integers(0, a.size, 300)                    # ... and some offered twice, with it
    a, b, j = np.r_[a, a[again]], np.r_[b, b[again]], np.r_[j, j[again]]
    fa, fb, fj = sink.maximum_spanning_forest(n, a, b, j)
    assert list(zip(fa.tolist(), fb.tolist(), fj.tolist())) == python_kruskal(n, a.tolist(), b.tolist(), j.tolist())
    assert 0 < fa.size < n
