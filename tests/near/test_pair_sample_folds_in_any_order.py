"""The pieces' pair samples folded as they arrive (``sink.SampleFold``), in any order, keep
exactly the best pairs of each 0.01 stratum of all the pairs: checked against a plain sort of
every pair, with ties in score, strata that overflow and folds forced mid-way."""
import numpy as np
import pytest

from auditor.near import sink
from auditor.near.result import STRATA


def _pairs(rng, n):
    a = rng.integers(0, 50, n)
    b = a + 1 + rng.integers(0, 50, n)
    j = np.round(rng.uniform(0.3, 1.0, n), 3)            # three decimals: many ties in score
    keys = np.unique(np.stack([a, b], axis=1), axis=0, return_index=True)[1]
    return a[keys], b[keys], j[keys]                      # each pair once, as pieces offer them


def _truth(a, b, j, cap):
    order = np.lexsort((b, a, -j))
    a, b, j = a[order], b[order], j[order]
    stratum = np.minimum(np.floor(j * STRATA + 1e-9).astype(int), STRATA)
    taken = {}
    keep = np.zeros(a.size, bool)
    for i, s in enumerate(stratum.tolist()):
        taken[s] = taken.get(s, 0) + 1
        keep[i] = taken[s] <= cap
    return a[keep], b[keep], j[keep], bool(keep.all())


@pytest.mark.parametrize("buffer", [150, 10 ** 9])         # folds between pieces; one fold at the end
def test_the_folded_sample_is_the_best_of_each_stratum_whatever_the_order(monkeypatch, buffer):
    rng = np.random.default_rng(5)
    a, b, j = _pairs(rng, 3000)
    for cap in (2, 30, 10_000):                            # every stratum overflows, some, none
        monkeypatch.setattr(sink, "STRATUM_CAP", cap)
        monkeypatch.setattr(sink, "BUFFER_MIN", buffer)
        want = _truth(a, b, j, cap)
        for seed in range(3):
            order = np.random.default_rng(seed).permutation(a.size)
            fold = sink.SampleFold()
            for part in np.array_split(order, 17):          # 17 pieces, in a shuffled order
                fold.add(a[part], b[part], j[part])
            got = fold.result()
            for x, y in zip(got[:3], want[:3]):
                np.testing.assert_array_equal(x, y)
            assert got[3] is want[3]
        assert want[3] is (cap == 10_000)                  # the case each cap meant to make


def test_an_incomplete_piece_makes_the_sample_incomplete():
    fold = sink.SampleFold()
    fold.add(np.array([0]), np.array([1]), np.array([0.9]), complete=False)
    fold.add(np.array([2]), np.array([3]), np.array([0.8]))
    a, b, j, complete = fold.result()
    assert a.tolist() == [0, 2] and b.tolist() == [1, 3] and complete is False
    empty = sink.SampleFold().result()
    assert [x.size for x in empty[:3]] == [0, 0, 0] and empty[3] is True
