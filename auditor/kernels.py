"""Compiled loops (numba) for the steps numpy cannot vectorise well.

- MinHash signatures (LSH path): numpy would make num_perm passes over every (record,
  shingle) entry with full-size temporaries; the loop keeps one entry's hash in a register
  while it updates all num_perm minima, ~10x faster on one core, bit-identical to
  ``near.minhash_signatures_numpy``;
- set intersections of candidate pairs (a merge of two sorted shingle lists);
- the forest's bottleneck test: the Kruskal reconstruction tree of a maximum spanning forest
  and lowest-common-ancestor queries on it (``near.sink``);
- the two passes over a dense template group's blocks (``near.dense``).

Imported only when needed (numba's import and cached compile cost ~0.5 s, more than the
default exact path spends on a small dataset).
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


# --------------------------------------------------------------------------- forest bottlenecks

@numba.njit(cache=True)
def _find(uf: np.ndarray, x: int) -> int:  # pragma: no cover  (compiled)
    root = x
    while uf[root] != root:
        root = uf[root]
    while uf[x] != root:
        uf[x], x = root, uf[x]
    return root


@numba.njit(cache=True)
def kruskal_tree(n: int, fa: np.ndarray, fb: np.ndarray, fbins: np.ndarray):  # pragma: no cover  (compiled)
    """The Kruskal reconstruction tree of a forest whose edges come sorted by score (bin) desc:
    leaves 0..n-1, one inner node per edge holding its bin, so the weakest edge on the forest
    path between two nodes is the bin of their lowest common ancestor. Returns (binary-lifting
    table up[level, node], depth, bin per node (leaves: max), tree root of each leaf)."""
    size = n + fa.size
    parent = np.arange(size).astype(np.int32)
    node_bin = np.full(size, np.iinfo(np.int64).max, np.int64)
    uf = np.arange(n).astype(np.int64)
    top = np.arange(n).astype(np.int32)           # KRT node standing for each union-find root
    for k in range(fa.size):
        ru, rv = _find(uf, fa[k]), _find(uf, fb[k])
        inner = n + k
        node_bin[inner] = fbins[k]
        parent[top[ru]] = inner
        parent[top[rv]] = inner
        uf[rv] = ru
        top[ru] = inner
    depth = np.zeros(size, np.int32)
    for x in range(size - 1, -1, -1):              # parents are created after their children
        if parent[x] != x:
            depth[x] = depth[parent[x]] + 1
    levels = 1
    while (1 << levels) < size:
        levels += 1
    up = np.empty((size, levels), np.int32)          # node-major: a node's ancestors share cache lines
    up[:, 0] = parent
    for lv in range(1, levels):
        for x in range(size):
            up[x, lv] = up[up[x, lv - 1], lv - 1]
    roots = np.empty(n, np.int32)
    for x in range(n):
        roots[x] = _find(uf, x)
    return up, depth, node_bin, roots


@numba.njit(nogil=True, cache=True)
def bottleneck_bins(up: np.ndarray, depth: np.ndarray, node_bin: np.ndarray, roots: np.ndarray,
                    a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover  (compiled)
    """out[i] = bin of the weakest forest edge between a[i] and b[i] (-1: not joined)."""
    for i in range(a.size):
        u, v = a[i], b[i]
        if roots[u] != roots[v]:
            out[i] = -1
        elif u == v:
            out[i] = node_bin[u]
        else:
            out[i] = node_bin[_lca(up, depth, u, v)]


@numba.njit(nogil=True, cache=True)
def _lca(up: np.ndarray, depth: np.ndarray, u: int, v: int) -> int:  # pragma: no cover  (compiled)
    """Lowest common ancestor of u and v (same tree) by binary lifting."""
    if depth[u] < depth[v]:
        u, v = v, u
    diff = depth[u] - depth[v]
    lv = 0
    while diff:
        if diff & 1:
            u = up[u, lv]
        diff >>= 1
        lv += 1
    if u == v:
        return u
    for lv in range(up.shape[1] - 1, -1, -1):
        if up[u, lv] != up[v, lv]:
            u, v = up[u, lv], up[v, lv]
    return up[u, 0]


@numba.njit(nogil=True, cache=True)
def implied_edges(up: np.ndarray, depth: np.ndarray, node_bin: np.ndarray, roots: np.ndarray,
                  level_bins: np.ndarray, level_comp: np.ndarray, a: np.ndarray, b: np.ndarray,
                  bins: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover  (compiled)
    """out[i] = True when the forest joins a[i] and b[i] by a path whose weakest edge scores at
    least bins[i] (the edge then changes no component at any threshold). Cheap answers first:
    different trees (no), or one component at a grid level at or above the edge's bin
    (``level_comp[level, node]``, levels ascending: yes); otherwise the reconstruction tree."""
    for i in range(a.size):
        u, v, bin_ = a[i], b[i], bins[i]
        if roots[u] != roots[v]:
            out[i] = False
            continue
        lv = np.searchsorted(level_bins, bin_)
        if lv < level_bins.size and level_comp[lv, u] == level_comp[lv, v]:
            out[i] = True
            continue
        out[i] = node_bin[_lca(up, depth, u, v)] >= bin_


# --------------------------------------------------------------------------- dense template groups

@numba.njit(cache=True)
def _offer(top_j: np.ndarray, top_n: np.ndarray, row: int, j: float, other: int) -> None:  # pragma: no cover
    """Keep row's k best (score, partner); ties keep the earlier one."""
    k = top_j.shape[1]
    if j <= top_j[row, k - 1]:
        return
    p = k - 1
    while p > 0 and top_j[row, p - 1] < j:
        top_j[row, p] = top_j[row, p - 1]
        top_n[row, p] = top_n[row, p - 1]
        p -= 1
    top_j[row, p] = j
    top_n[row, p] = other


@numba.njit(nogil=True, cache=True)
def dense_count_block(inter: np.ndarray, r0: int, sizes: np.ndarray, weight: np.ndarray, t: float, base: int,
                      node_hist: np.ndarray, record_hist: np.ndarray, top_j: np.ndarray,
                      top_n: np.ndarray) -> int:  # pragma: no cover  (compiled)
    """One block of a dense group: inter[i, c] = |x & y| of group rows r0 + i and r0 + c (the
    block holds the columns from r0 on). Counts every pair c > i with Jaccard >= t into the
    histograms (bins as ``result.score_bins``, minus ``base``) and offers it to both ends' k
    best. Returns the pairs counted."""
    counted = 0
    k = top_j.shape[1]
    rows, width = inter.shape
    for i in range(rows):
        r = r0 + i
        sr = sizes[r]
        for c_off in range(i + 1, width):
            x = inter[i, c_off]
            if x == 0.0:
                continue
            c = r0 + c_off
            j = x / (sr + sizes[c] - x)
            if j < t - 1e-9:
                continue
            b = np.int64((j + 1e-9) * 1_000_000) - base     # j > 0: truncation is the floor
            node_hist[b] += 1
            record_hist[b] += weight[r] * weight[c]
            counted += 1
            if j > top_j[r, k - 1]:
                _offer(top_j, top_n, r, j, c)
            if j > top_j[c, k - 1]:
                _offer(top_j, top_n, c, j, r)
    return counted


@numba.njit(nogil=True, cache=True)
def dense_emit_block(inter: np.ndarray, r0: int, start: int, sizes: np.ndarray, ids: np.ndarray, t: float,
                     to_hub: np.ndarray, up: np.ndarray, depth: np.ndarray, node_bin: np.ndarray, roots: np.ndarray,
                     level_bins: np.ndarray, level_comp: np.ndarray,
                     floor_j: np.ndarray, floor_a: np.ndarray, floor_b: np.ndarray, strata: int,
                     out_a: np.ndarray, out_b: np.ndarray, out_j: np.ndarray):  # pragma: no cover
    """The same block again: emit the pairs (global ids) that the forest does not imply, or that
    may enter the pair sample, from flat cell ``start`` on, until the output arrays are full.
    ``to_hub[r]``: the weakest forest edge (bin) between group row r and one hub node, so a
    pair whose bin is at most both ends' ``to_hub`` is implied through the hub without a
    tree walk. Returns (pairs emitted, next cell, or -1 when the block is done)."""
    rows, width = inter.shape
    cap = out_a.size
    n_out = 0
    one_a = np.empty(1, np.int64)
    one_b = np.empty(1, np.int64)
    one_bin = np.empty(1, np.int64)
    res = np.empty(1, np.bool_)
    for cell in range(start, rows * width):
        i = cell // width
        c_off = cell - i * width
        if c_off <= i:
            continue
        x = inter[i, c_off]
        if x == 0.0:
            continue
        r = r0 + i
        c = r0 + c_off
        j = x / (sizes[r] + sizes[c] - x)
        if j < t - 1e-9:
            continue
        ga, gb = ids[r], ids[c]
        s = min(np.int64(np.floor(j * strata + 1e-9)), strata)
        keep = floor_j[s] < 0 or j > floor_j[s] or (j == floor_j[s] and (ga < floor_a[s] or
                                                                      (ga == floor_a[s] and gb < floor_b[s])))
        if not keep:
            bin_ = np.int64((j + 1e-9) * 1_000_000)
            if to_hub[r] >= bin_ and to_hub[c] >= bin_:
                continue
            one_a[0], one_b[0], one_bin[0] = ga, gb, bin_
            implied_edges(up, depth, node_bin, roots, level_bins, level_comp, one_a, one_b, one_bin, res)
            keep = not res[0]
        if keep:
            if n_out == cap:
                return n_out, cell
            out_a[n_out], out_b[n_out], out_j[n_out] = ga, gb, j
            n_out += 1
    return n_out, -1


# --------------------------------------------------------------------------- verification

@numba.njit(nogil=True, cache=True)
def intersections(indptr: np.ndarray, indices: np.ndarray, a: np.ndarray, b: np.ndarray,
                  out: np.ndarray) -> None:  # pragma: no cover  (compiled)
    """out[i] = |row a[i] & row b[i]| of a CSR matrix with sorted indices (a merge of the two)."""
    for i in range(a.size):
        p, p_end = indptr[a[i]], indptr[a[i] + 1]
        q, q_end = indptr[b[i]], indptr[b[i] + 1]
        count = 0
        while p < p_end and q < q_end:
            x, y = indices[p], indices[q]
            if x == y:
                count += 1
                p += 1
                q += 1
            elif x < y:
                p += 1
            else:
                q += 1
        out[i] = count
