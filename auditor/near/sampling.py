"""A seeded, order-free choice of pairs or rows: what the work budget verifies or counts past
it (``join``'s candidates, ``dense``'s rows), the same whatever block or thread it comes in."""
from __future__ import annotations

import numpy as np


def sampled(a: np.ndarray, b: np.ndarray, seed: int, rate: float) -> np.ndarray:
    """A seeded, order-free choice of pairs at ``rate``: the same pair is chosen or not whatever
    block or thread it comes in."""
    return uniform(a, b, seed) < rate


def uniform(a: np.ndarray, b: np.ndarray, seed: int) -> np.ndarray:
    """A seeded hash of each pair (a[i], b[i]) as a number in [0, 1) (53 bits)."""
    with np.errstate(over="ignore"):
        x = (a.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ (b.astype(np.uint64) + np.uint64(seed) *
                                                                       np.uint64(0xD1B54A32D192ED03))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) / float(2 ** 53)


def one_per_stretch(n: int, key: int, seed: int, rate: float) -> np.ndarray:
    """Rows of 0..n-1 chosen one per stretch of k = round(1 / rate) consecutive rows, at a seeded
    position (a stretch cut short by n holds its row only when the position falls inside it):
    every row is chosen with chance 1 / k, and the chosen rows spread evenly, so an estimate
    summed over them varies less than over rows drawn one by one (whose spread the interval
    assumes)."""
    k = max(1, int(round(1 / rate)))
    stretches = np.arange((n + k - 1) // k, dtype=np.int64)
    rows = stretches * k + np.floor(uniform(stretches, np.full(stretches.size, key), seed) * k).astype(np.int64)
    return rows[rows < n]
