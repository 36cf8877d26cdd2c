"""Our MinHash-LSH parameter maths against datasketch's (the reference implementation the benchmark
also runs): the bands and rows a scan picks (auditor/near.py ``choose_bands``) and the catch
probability 1 - (1 - t^r)^b it reports (``Pairs.catch_probability``).

1. The S-curve: datasketch scores an LSH setting by the integrals of its S-curve, false positives
   over [0, t] and false negatives over [t, 1] (``datasketch.lsh._false_positive_probability`` /
   ``_false_negative_probability``, what ``MinHashLSH`` minimises to pick b and r). Integrating our
   ``catch_probability`` gives the same numbers for the b, r the scan chose.
2. The choice: datasketch accepts our (b, r) (``MinHashLSH(params=...)``, b * r <= num_perm), and by
   its own measure our setting misses less than its default optimum at the same threshold (we
   target recall >= 0.99 at the lowest threshold and pay in candidates, which we verify exactly).
3. The behaviour: datasketch's own MinHash + MinHashLSH, with our (b, r), catches a pair of known
   Jaccard as often as ``catch_probability`` predicts.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import auditor
from auditor import ScanSettings

datasketch = pytest.importorskip("datasketch")
from datasketch import MinHash, MinHashLSH  # noqa: E402
from datasketch.lsh import _false_negative_probability, _false_positive_probability  # noqa: E402

# lowest curve threshold -> the curve searched down to it
FLOORS = {0.3: (0.9, 0.7, 0.5, 0.3), 0.5: (0.9, 0.7, 0.5), 0.7: (0.9, 0.8, 0.7), 0.9: (0.9,)}


@pytest.fixture(scope="module")
def lsh_pairs():
    """The Pairs of a forced-LSH scan of the bundled HumanEval prompts, per lowest threshold."""
    out = {}
    for floor, thresholds in FLOORS.items():
        result = auditor.scan("example:humaneval", text="prompt",
                              settings=ScanSettings(method="lsh", threshold=floor, thresholds=thresholds))
        assert result.pairs.method == "minhash-lsh" and result.pairs.min_threshold == floor
        out[floor] = result.pairs
    return out


def integral(f, lo: float, hi: float, n: int = 20_000) -> float:
    """Composite Simpson's rule (n even): independent of the quadrature datasketch uses."""
    x = np.linspace(lo, hi, n + 1)
    y = np.array([f(v) for v in x])
    return float((hi - lo) / (3 * n) * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum()))


@pytest.mark.parametrize("floor", list(FLOORS))
def test_catch_probability_integrates_to_datasketch_error_measures(lsh_pairs, floor):
    pairs = lsh_pairs[floor]
    b, r = pairs.bands, pairs.rows
    assert b * r <= pairs.num_perm
    for t in FLOORS[floor]:
        fp = integral(pairs.catch_probability, 0.0, t)
        fn = integral(lambda s: 1.0 - pairs.catch_probability(s), t, 1.0)
        assert fp == pytest.approx(_false_positive_probability(t, b, r), abs=1e-9), (floor, t)
        assert fn == pytest.approx(_false_negative_probability(t, b, r), abs=1e-9), (floor, t)


@pytest.mark.parametrize("floor", list(FLOORS))
def test_our_bands_are_valid_for_datasketch_and_trade_candidates_for_recall(lsh_pairs, floor):
    pairs = lsh_pairs[floor]
    b, r = pairs.bands, pairs.rows
    ours = MinHashLSH(num_perm=pairs.num_perm, params=(b, r))
    assert (ours.b, ours.r) == (b, r)
    assert pairs.catch_probability(floor) >= 0.99
    theirs = MinHashLSH(threshold=floor, num_perm=pairs.num_perm)      # datasketch's FP/FN optimum
    fn_ours, fn_theirs = _false_negative_probability(floor, b, r), _false_negative_probability(floor, theirs.b, theirs.r)
    # every pair at or above the floor is caught with probability >= 0.99, so at most 1% of [t, 1] is lost
    assert fn_ours <= 0.01 * (1 - floor)
    assert fn_ours < fn_theirs / 10
    assert _false_positive_probability(floor, b, r) > _false_positive_probability(floor, theirs.b, theirs.r)


def pair_with_jaccard(inter: int, union: int) -> tuple[list[bytes], list[bytes]]:
    """Two sets of equal size with |A & B| = inter and |A | B| = union."""
    assert (union + inter) % 2 == 0
    size = (union + inter) // 2
    a = [b"w%d" % i for i in range(size)]
    b = [b"w%d" % i for i in range(size - inter, size - inter + size)]
    assert len(set(a) & set(b)) == inter and len(set(a) | set(b)) == union
    return a, b


@pytest.mark.parametrize("inter, union", [(4, 80), (10, 100), (20, 100)])
def test_datasketch_lsh_with_our_bands_catches_as_predicted(lsh_pairs, inter, union):
    """Seeded Monte Carlo: datasketch hashes, our (b, r); the catch rate of a pair of Jaccard s matches
    catch_probability(s) within 4.5 standard deviations (s = 0.05, 0.1, 0.2: P = 0.15, 0.47, 0.93)."""
    pairs = lsh_pairs[0.3]
    b, r = pairs.bands, pairs.rows
    a, c = pair_with_jaccard(inter, union)
    s = inter / union
    trials = 400
    caught = 0
    for seed in range(trials):
        ma, mc = MinHash(num_perm=b * r, seed=seed), MinHash(num_perm=b * r, seed=seed)
        ma.update_batch(a)
        mc.update_batch(c)
        lsh = MinHashLSH(num_perm=b * r, params=(b, r))
        lsh.insert("a", ma)
        caught += "a" in lsh.query(mc)
    p = pairs.catch_probability(s)
    assert 0.1 < p < 0.95
    assert abs(caught / trials - p) <= 4.5 * math.sqrt(p * (1 - p) / trials), (s, caught / trials, p)
