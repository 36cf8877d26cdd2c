"""Compiled loops (numba) for the one step numpy cannot vectorise well: MinHash signatures.

numpy computes a signature as num_perm passes over every (record, shingle) entry, each
pass several full-size temporaries; the loop below keeps one entry's hash in a register
while it updates all num_perm minima, ~10x faster on one core. Imported only by the
LSH path (numba's import and cached compile cost ~0.5 s, more than the default exact path
spends on a small dataset). Results are bit-identical to ``near.minhash_signatures_numpy``.
"""
from __future__ import annotations

import os
import tempfile

# numba caches compiled code beside this file; where the package is read-only (a system
# install) it would fail to cache, so point it at a temporary directory instead.
if "NUMBA_CACHE_DIR" not in os.environ and not os.access(os.path.dirname(os.path.abspath(__file__)), os.W_OK):
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "auditor-numba-cache")

import numba  # noqa: E402
import numpy as np  # noqa: E402


@numba.njit(nogil=True, cache=True)
def minhash_rows(base: np.ndarray, indptr: np.ndarray, mul: np.ndarray, add: np.ndarray,
                 out: np.ndarray, lo: int, hi: int) -> None:  # pragma: no cover  (compiled)
    """out[r, p] = min over r's entries e of (base[e] * mul[p] + add[p]) >> 32, rows lo..hi-1."""
    num_perm = mul.size
    shift = np.uint64(32)
    for r in range(lo, hi):
        row = out[r]
        row[:] = np.uint32(0xFFFFFFFF)
        for e in range(indptr[r], indptr[r + 1]):
            h = base[e]
            for p in range(num_perm):
                v = np.uint32((h * mul[p] + add[p]) >> shift)
                if v < row[p]:
                    row[p] = v
