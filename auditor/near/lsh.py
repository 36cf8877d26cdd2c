"""MinHash-LSH candidates: seeded MinHash signatures (a compiled loop) split into bands;
nodes that agree on a whole band become candidates. Bands and rows are chosen for the
lowest threshold, so a pair there is caught with probability >= TARGET_RECALL. Used when
the exact search's candidate bound is too high (``auto``), or on request (``lsh``)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import parallel
from ..errors import AuditorError
from ..parallel import thread_map

TARGET_RECALL = 0.99         # per-pair catch probability wanted at the lowest threshold


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


def splitmix64(x: np.ndarray) -> np.ndarray:
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
    return splitmix64(np.arange(nodes.shape[1], dtype=np.uint64) ^ np.uint64(seed))[nodes.indices]


def minhash_signatures(nodes: sp.csr_matrix, num_perm: int, seed: int, progress=None) -> np.ndarray:
    """(n_nodes, num_perm) uint32 MinHash signatures; every node has at least one shingle.
    Permutation p maps a shingle hash h to (h * mul[p] + add[p]) >> 32 (multiply-shift
    hashing); the signature is each permutation's minimum. Computed by the compiled loop
    in ``kernels`` on parallel.WORKERS threads, in row slices."""
    from ..kernels import minhash_rows

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


BATCH = 2_000_000            # candidate pairs handed to verification at a time


def lsh_candidate_batches(sig: np.ndarray, bands: int, rows: int, batch: int = BATCH, progress=None,
                          group: np.ndarray | None = None):
    """Node pairs (a < b) that agree on at least one whole band, as (a, b) batches of at most
    ``batch`` pairs. A pair is emitted only in the first band where it collides (the compiled
    loop checks the earlier bands), so the batches hold each candidate once and memory stays
    at one batch, however many pairs a bucket of templated copies makes. ``group``: each node's
    dense group (``dense.group_of``; -1 none): pairs inside one group are not proposed (the
    dense pass scores them), and a bucket's members of one group are skipped as a run."""
    from ..kernels import band_first_pairs

    keys = band_keys(sig, bands, rows)
    out_a = np.empty(batch, dtype=np.int64)
    out_b = np.empty(batch, dtype=np.int64)
    n = sig.shape[0]
    for band in range(bands):
        bucket = keys[:, band]
        if group is None:
            order = np.argsort(bucket, kind="stable").astype(np.int64)
            skip_to = np.arange(1, n + 1, dtype=np.int64)
        else:
            order = np.lexsort((np.arange(n), group, bucket)).astype(np.int64)
            skip_to = group_runs(bucket[order], group[order])
        ordered = bucket[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if ordered.size else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], ordered.size].astype(np.int64)
        shared = ends - starts > 1
        starts, ends = starts[shared].astype(np.int64), ends[shared]
        state = np.array([0, -1, 0], dtype=np.int64)
        while state[0] < starts.size:
            k = band_first_pairs(order, starts, ends, keys, band, state, out_a, out_b, skip_to)
            if k:
                yield out_a[:k].copy(), out_b[:k].copy()
        if progress:
            progress((band + 1) / bands, "finding candidates")


def group_runs(bucket: np.ndarray, group: np.ndarray) -> np.ndarray:
    """For nodes sorted by (bucket, group): the first position each may pair with, past its
    run of one bucket and one dense group (the next position for a node in no group)."""
    n = bucket.size
    if not n:
        return np.zeros(0, np.int64)
    new_run = np.r_[True, (bucket[1:] != bucket[:-1]) | (group[1:] != group[:-1])]
    run_start = np.flatnonzero(new_run)
    run_end = np.r_[run_start[1:], n]
    end_of = np.repeat(run_end, np.diff(np.r_[run_start, n]))
    return np.where(group >= 0, end_of, np.arange(1, n + 1)).astype(np.int64)


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) keys, equal exactly when two nodes agree on a whole band. For one or two rows
    per band the signature itself, viewed as one integer per band (no copy); else a label."""
    sig = np.ascontiguousarray(sig[:, :bands * rows])
    if rows == 1:
        return sig
    if rows == 2:
        return sig.view(np.uint64)
    keys = np.empty((sig.shape[0], bands), dtype=np.int64)
    for band in range(bands):
        keys[:, band] = _band_keys(sig, band, rows)
    return keys


def lsh_candidates(sig: np.ndarray, bands: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate pair at once, sorted (a, b): for tests and benchmarks; the search itself
    streams ``lsh_candidate_batches``."""
    parts = list(lsh_candidate_batches(sig, bands, rows))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes = np.sort(np.concatenate([a * np.int64(sig.shape[0]) + b for a, b in parts]))
    return np.divmod(codes, np.int64(sig.shape[0]))


def _band_keys(sig: np.ndarray, band: int, rows: int) -> np.ndarray:
    """One integer per node that is equal exactly when two nodes agree on the whole band."""
    chunk = np.ascontiguousarray(sig[:, band * rows:(band + 1) * rows])
    if rows <= 2:       # the band is one integer already: group on it directly (2.7x faster)
        return chunk.view(np.uint64 if rows == 2 else np.uint32).reshape(-1)
    return np.unique(chunk.view(np.dtype((np.void, 4 * rows))).reshape(-1), return_inverse=True)[1].reshape(-1)


def lsh_band_pairs(sig: np.ndarray, band: int, rows: int) -> np.ndarray:
    """Pairs (a * n + b, a < b) of nodes whose signatures agree on the whole of ``band``."""
    return pairs_within_groups(_band_keys(sig, band, rows))


def distinct_rows(values: np.ndarray) -> np.ndarray:
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

