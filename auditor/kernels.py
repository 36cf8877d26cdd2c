"""Compiled loops (numba) for the steps numpy cannot vectorise well.

- MinHash signatures (LSH path): numpy would make num_perm passes over every (record,
  shingle) entry with full-size temporaries; the loop keeps one entry's hash in a register
  while it updates all num_perm minima, ~10x faster on one core, bit-identical to
  ``near.minhash_signatures_numpy``;
- the exact search's candidates: a query row's prefix shingles walked through the inverted
  lists of the indexed rows, counting shared prefix shingles in a dense array (All-Pairs'
  accumulation), with the size and overlap filters applied per pair (``near.prefix``);
- set intersections of candidate pairs (a merge of two sorted shingle lists);
- the forest's bottleneck test: the Kruskal reconstruction tree of a maximum spanning forest
  and lowest-common-ancestor queries on it (``near.sink``);
- the two passes over a dense template group's blocks (``near.dense``);
- LSH candidates band by band, each pair emitted only in the first band where it collides
  (``near.lsh``), into a fixed buffer, so a bucket of 10,000 copies never lists its pairs at once;
- the contamination scan of a batch in one pass over its bytes (``ngram_scan``: words, their ids,
  rolling n-gram keys, confirmation and the reduction), with its word table and non-ASCII runs.

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
def kruskal_forest(n: int, a: np.ndarray, b: np.ndarray, order: np.ndarray, picked: np.ndarray) -> None:  # pragma: no cover
    """Kruskal's forest of the edges (a, b) taken in ``order``: picked[k] is set when edge order[k]
    joins two trees (a pair offered twice is picked once, at its first place)."""
    uf = np.arange(n).astype(np.int64)
    for k in range(order.size):
        e = order[k]
        ru, rv = _find(uf, a[e]), _find(uf, b[e])
        if ru != rv:
            uf[rv] = ru
            picked[k] = True


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
    # Binary lifting needs 2^levels above the deepest node, not above the tree's size: the
    # table takes 4 bytes a node a level (clusters of edited copies: 9 levels, not 21).
    deepest = depth.max() if size else 0
    levels = 1
    while (1 << levels) <= deepest:
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
def dense_count_block(inter: np.ndarray, shared: int, missing: np.ndarray, r0: int, sizes: np.ndarray,
                      weight: np.ndarray, mult: np.ndarray,
                      t: float, base: int, node_hist: np.ndarray, record_hist: np.ndarray, top_j: np.ndarray,
                      top_n: np.ndarray) -> int:  # pragma: no cover  (compiled)
    """One block of a dense group: inter[i, c] + shared - missing[r] - missing[c] = |x & y| of
    group rows r = r0 + i and r0 + c (the block holds the columns from r0 on; ``shared`` columns
    held by nearly every row enter as a count, ``missing[r]`` of them absent from row r, and
    their absences' overlap is in ``inter``). Counts every pair c > i with Jaccard >= t into the
    histograms (bins as ``result.score_bins``, minus ``base``; node pairs as mult[r] * mult[c])
    and offers it to both ends' k best. Returns the pairs counted."""
    counted = 0
    k = top_j.shape[1]
    rows, width = inter.shape
    for i in range(rows):
        r = r0 + i
        sr = sizes[r]
        base_r = shared - missing[r]
        for c_off in range(i + 1, width):
            x = inter[i, c_off] + (base_r - missing[c_off + r0])
            if x == 0.0:
                continue
            c = r0 + c_off
            j = x / (sr + sizes[c] - x)
            if j < t - 1e-9:
                continue
            b = np.int64((j + 1e-9) * 1_000_000) - base     # j > 0: truncation is the floor
            node_hist[b] += mult[r] * mult[c]
            record_hist[b] += weight[r] * weight[c]
            counted += 1
            if j > top_j[r, k - 1]:
                _offer(top_j, top_n, r, j, c)
            if j > top_j[c, k - 1]:
                _offer(top_j, top_n, c, j, r)
    return counted


@numba.njit(nogil=True, cache=True)
def dense_count_rows(inter: np.ndarray, shared: int, missing: np.ndarray, rows: np.ndarray, c0: int,
                     sizes: np.ndarray, weight: np.ndarray, mult: np.ndarray, t: float, base: int, node_hist: np.ndarray, record_hist: np.ndarray,
                     row_node: np.ndarray, row_record: np.ndarray, top_j: np.ndarray,
                     top_n: np.ndarray) -> int:  # pragma: no cover  (compiled)
    """Sampled rows of a dense group: inter[i, c_off] (completed as ``dense_count_block``'s) =
    |x & y| of group rows rows[i] and c0 + c_off (rows ascending, rows[0] >= c0). Counts every
    pair (rows[i], c), c > rows[i], with Jaccard >= t into the histograms (as
    ``dense_count_block``), and each row's own pairs per 0.01 stratum (score bin // 10,000) into
    row_node[i] / row_record[i], which the interval needs; offers each pair to both ends' k
    best. Returns the pairs counted."""
    counted = 0
    k = top_j.shape[1]
    n_rows, width = inter.shape
    for i in range(n_rows):
        r = rows[i]
        sr = sizes[r]
        base_r = shared - missing[r]
        for c_off in range(r - c0 + 1, width):
            x = inter[i, c_off] + (base_r - missing[c_off + c0])
            if x == 0.0:
                continue
            c = c0 + c_off
            j = x / (sr + sizes[c] - x)
            if j < t - 1e-9:
                continue
            b = np.int64((j + 1e-9) * 1_000_000)
            m = mult[r] * mult[c]
            w = weight[r] * weight[c]
            node_hist[b - base] += m
            record_hist[b - base] += w
            s = b // 10_000
            row_node[i, s] += m
            row_record[i, s] += w
            counted += 1
            if j > top_j[r, k - 1]:
                _offer(top_j, top_n, r, j, c)
            if j > top_j[c, k - 1]:
                _offer(top_j, top_n, c, j, r)
    return counted


@numba.njit(nogil=True, cache=True)
def add_sparse_from(inter: np.ndarray, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                    c0: int) -> None:  # pragma: no cover  (compiled)
    """inter[i, c - c0] += the CSR matrix's (i, c) for every entry with c >= c0 (a block's sparse
    products over all columns, of which it holds those from c0 on)."""
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            if c >= c0:
                inter[i, c - c0] += data[p]


@numba.njit(nogil=True, cache=True)
def _quiet_mask(row: np.ndarray, quiet: np.ndarray, sizes_f: np.ndarray, missing_f: np.ndarray, flag: np.ndarray,
                q_r: float, sr_f: float, base_f: float, t_low: float, lo: int,
                hi: int) -> None:  # pragma: no cover  (compiled)
    """flag[c], lo <= c < hi = the pair (r, c) of one block row may score max(t_low, min(q_r,
    quiet[c])) or more (x / (s - x) >= z  <=>  x (1 + z) >= z s): no branches or divisions."""
    for c in range(lo, hi):
        z = min(q_r, quiet[c])
        z = max(z, t_low)
        flag[c] = (row[c] + (base_f - missing_f[c])) * (1.0 + z) >= z * (sr_f + sizes_f[c])


@numba.njit(nogil=True, cache=True)
def _sample_mask(row: np.ndarray, quiet: np.ndarray, sizes_f: np.ndarray, missing_f: np.ndarray, flag: np.ndarray,
                 q_r: float, sr_f: float, base_f: float, t: float, lo: int, hi: int, floor_j: np.ndarray,
                 strata: int) -> None:  # pragma: no cover  (compiled)
    """flag[c] = the pair (r, c) of a sampled row reaches t and either may enter the pair sample
    (its stratum has room, or it scores at least the stratum's worst kept pair) or may score
    min(q_r, quiet[c]) or more (lo <= c < hi): its score as the emit loop computes it, without branches."""
    for c in range(lo, hi):
        x = row[c] + (base_f - missing_f[c])
        j = x / (sr_f + sizes_f[c] - x)
        f = floor_j[min(np.int64(np.floor(j * strata + 1e-9)), strata)]
        z = min(q_r, quiet[c])
        flag[c] = (j >= t - 1e-9) & ((f < 0.0) | (j >= f) | (j >= z))


@numba.njit(nogil=True, cache=True)
def dense_emit_block(inter: np.ndarray, shared: int, missing: np.ndarray, r0: int, start: int, stop: int,
                     sizes: np.ndarray, ids: np.ndarray, t: float,
                     to_hub: np.ndarray, up: np.ndarray, depth: np.ndarray, node_bin: np.ndarray, roots: np.ndarray,
                     level_bins: np.ndarray, level_comp: np.ndarray,
                     floor_j: np.ndarray, floor_a: np.ndarray, floor_b: np.ndarray, strata: int,
                     sample_row: np.ndarray, cut: int, weight: np.ndarray, mult: np.ndarray, base: int,
                     node_hist: np.ndarray, record_hist: np.ndarray, out_a: np.ndarray, out_b: np.ndarray,
                     out_j: np.ndarray, quiet: np.ndarray, sizes_f: np.ndarray,
                     missing_f: np.ndarray):  # pragma: no cover
    """The same block again (completed as ``dense_count_block``'s): emit the pairs (global ids)
    that the forest does not imply, or that may enter the pair sample (only pairs of rows whose
    ``sample_row`` is set: the counted ones), from flat cell ``start`` on, in the block's rows
    before ``stop``, until the output arrays are full. ``to_hub[r]``: the weakest forest edge
    (bin) between group row r and one hub node, so a pair whose bin is at most both ends'
    ``to_hub`` is implied through the hub without a tree walk. A pair of a row whose
    ``sample_row`` is not set and whose bin is at least ``cut`` is counted into the histograms
    (as ``dense_count_block``). Returns (pairs emitted, next cell, or -1 when the rows are done).

    ``quiet[r]``: to_hub[r] and the cut as a score a little below them, so that in a row whose
    pairs cannot enter the sample, a pair scoring under max(t, min(quiet[r], quiet[c])) (strictly
    below every bin that would need it) is passed over by a division-free test that the compiler
    runs over a whole row at a time; in a sampled row, also a pair below its stratum's worst kept
    pair (``_sample_mask``); ``sizes_f`` / ``missing_f``: sizes and missing as floats."""
    rows, width = inter.shape
    cap = out_a.size
    n_out = 0
    one_a = np.empty(1, np.int64)
    one_b = np.empty(1, np.int64)
    one_bin = np.empty(1, np.int64)
    res = np.empty(1, np.bool_)
    flag = np.empty(width, np.bool_)
    t_low = t - 1e-6
    first = start // width
    for i in range(first, stop):
        r = r0 + i
        sr = sizes[r]
        base_r = shared - missing[r]
        hub_r = to_hub[r]
        sampling = sample_row[r]
        lo = i + 1
        if i == first:
            lo = max(lo, start - i * width)
        # Most pairs are implied through the hub, below the cut and out of the sample: one pass
        # without branches (or divisions: x / (s - x) >= z  <=>  x (1 + z) >= z s) marks the others.
        if sampling:
            _sample_mask(inter[i], quiet[r0:], sizes_f[r0:], missing_f[r0:], flag, quiet[r], sizes_f[r],
                         shared - missing_f[r], t, lo, width, floor_j, strata)
        else:
            _quiet_mask(inter[i], quiet[r0:], sizes_f[r0:], missing_f[r0:], flag, quiet[r], sizes_f[r],
                        shared - missing_f[r], t_low, lo, width)
        for c_off in range(lo, width):
            if not flag[c_off]:
                continue
            x = inter[i, c_off] + (base_r - missing[c_off + r0])
            if x == 0.0:
                continue
            c = r0 + c_off
            j = x / (sr + sizes[c] - x)
            if j < t - 1e-9:
                continue
            ga, gb = ids[r], ids[c]
            bin_ = np.int64((j + 1e-9) * 1_000_000)
            keep = False
            if sampling:
                s = min(np.int64(np.floor(j * strata + 1e-9)), strata)
                keep = floor_j[s] < 0 or j > floor_j[s] or (j == floor_j[s] and (ga < floor_a[s] or
                                                                              (ga == floor_a[s] and gb < floor_b[s])))
            if not keep and (hub_r < bin_ or to_hub[c] < bin_):
                one_a[0], one_b[0], one_bin[0] = ga, gb, bin_
                implied_edges(up, depth, node_bin, roots, level_bins, level_comp, one_a, one_b, one_bin, res)
                keep = not res[0]
            if keep:
                if n_out == cap:
                    return n_out, i * width + c_off          # this cell again on the next call
                out_a[n_out], out_b[n_out], out_j[n_out] = ga, gb, j
                n_out += 1
            if bin_ >= cut and not sampling:
                node_hist[bin_ - base] += mult[r] * mult[c]
                record_hist[bin_ - base] += weight[r] * weight[c]
    return n_out, -1


# --------------------------------------------------------------------------- LSH candidates

@numba.njit(nogil=True, cache=True)
def band_first_pairs(order: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray, band: int,
                     state: np.ndarray, out_a: np.ndarray, out_b: np.ndarray,
                     skip_to: np.ndarray) -> int:  # pragma: no cover
    """Pairs of nodes in one bucket of ``band`` (bucket g = order[starts[g]:ends[g]]) whose band
    keys (``keys[node, band]``, equal when two nodes agree on the whole band) differ on every
    earlier band, so each candidate pair is emitted once over all bands. Fills out_a/out_b
    (a < b) and returns how many; ``state`` = (bucket, i, j) where it stopped, to resume when the
    buffer was full (bucket == starts.size when the band is done). ``skip_to[i]``: the first
    position after i that i may pair with (i + 1, or the end of i's run of one dense group, whose
    pairs are scored elsewhere)."""
    cap = out_a.size
    k = 0
    g, i, j = state[0], state[1], state[2]
    while g < starts.size:
        end = ends[g]
        if i < starts[g]:
            i = starts[g]
            j = i + 1
        while i < end - 1:
            a = order[i]
            key_a = keys[a]
            if j < skip_to[i]:
                j = skip_to[i]
            while j < end:
                if k == cap:
                    state[0], state[1], state[2] = g, i, j
                    return k
                b = order[j]
                j += 1
                key_b = keys[b]
                first = True
                for q in range(band):
                    if key_a[q] == key_b[q]:
                        first = False
                        break
                if first:
                    out_a[k], out_b[k] = min(a, b), max(a, b)
                    k += 1
            i += 1
            j = i + 1
        g += 1
        i = -1
    state[0], state[1], state[2] = g, -1, 0
    return k


# --------------------------------------------------------------------------- exact-search candidates

@numba.njit(nogil=True, cache=True)
def prefix_candidates(start: int, stop: int, q_indptr: np.ndarray, q_indices: np.ndarray, t_indptr: np.ndarray,
                      t_indices: np.ndarray, upper: bool, sizes: np.ndarray, last: np.ndarray, suffix: np.ndarray,
                      t: float, eps: float, group: np.ndarray, count: np.ndarray, touched: np.ndarray,
                      out_a: np.ndarray, out_b: np.ndarray, out_bound: np.ndarray) -> int:  # pragma: no cover
    """Candidate pairs of query rows start..stop-1: indexed rows sharing a prefix shingle (rows
    > the query row when ``upper``), kept when they pass the size filter, the overlap bound of
    ``near.prefix.CandidateFilter`` and (``group`` non-empty) are not in the same dense group.
    ``count``/``touched``: zeroed scratch of one slot per indexed row. ``out_bound``: each pair's
    overlap bound (shared prefix shingles + the suffix that may hold more). Returns the pairs written."""
    k = 0
    bound = t / (1 + t)
    grouped = group.size > 0
    for q in range(start, stop):
        n_touched = 0
        for e in range(q_indptr[q], q_indptr[q + 1]):
            c = q_indices[e]
            lo, hi = t_indptr[c], t_indptr[c + 1]
            if upper:                                   # first indexed row > q (sorted list)
                left, right = lo, hi
                while left < right:
                    mid = (left + right) >> 1
                    if t_indices[mid] <= q:
                        left = mid + 1
                    else:
                        right = mid
                lo = left
            for f in range(lo, hi):
                r = t_indices[f]
                if count[r] == 0:
                    touched[n_touched] = r
                    n_touched += 1
                count[r] += 1
        sq, lq, fq = sizes[q], last[q], suffix[q]
        gq = group[q] if grouped else -1
        for i in range(n_touched):
            r = touched[i]
            shared = count[r]
            count[r] = 0
            if grouped and gq >= 0 and group[r] == gq:
                continue
            sr = sizes[r]
            if min(sq, sr) < t * max(sq, sr) - eps:
                continue
            lr = last[r]
            rest = suffix[q] if lq < lr else (suffix[r] if lr < lq else min(fq, suffix[r]))
            if shared + rest < bound * (sq + sr) - eps:
                continue
            out_a[k] = q
            out_b[k] = r
            out_bound[k] = shared + rest
            k += 1
    return k


# --------------------------------------------------------------------------- contamination tokens

FNV_PRIME = np.uint64(0x100000001B3)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# What a byte (wordtokens.BYTE_CLASS) or a character (wordtokens.unicode_table) is to the words; numba
# reads these as constants. OTHER: a non-ASCII byte, or a character the table cannot decide alone;
# ALONE: a kept character of a script written without spaces, a word of its own.
DELETE, KEEP, SPACE, OTHER, SIGMA, ALONE = 0, 1, 2, 3, 4, 5
CASED, IGNORABLE = 1, 2     # a character's part in the final-sigma rule (wordtokens.UnicodeTable.context)


@numba.njit(nogil=True, cache=True)
def packed_word(data, lo, length):  # pragma: no cover  (compiled)
    """A word's first 8 bytes as one little-endian integer (what the scan compares first)."""
    packed = np.uint64(0)
    for j in range(min(length, 8)):
        packed |= np.uint64(data[lo + j]) << np.uint64(8 * j)
    return packed


@numba.njit(nogil=True, cache=True)
def word_slot(data, lo, length, packed, shift):  # pragma: no cover  (compiled)
    """A word's home slot in a word table of 2**(64 - shift) rows: its first 8 bytes (``packed``)
    and length, and, for a longer word, FNV-1a over the rest, mixed by a multiply whose top bits
    are the slot (Fibonacci hashing: every byte of ``packed`` reaches them)."""
    h = packed ^ np.uint64(length)
    for i in range(lo + 8, lo + length):
        h = (h ^ np.uint64(data[i])) * FNV_PRIME
    return (h * GOLDEN) >> shift


@numba.njit(nogil=True, cache=True)
def slot_shift(rows):  # pragma: no cover  (compiled)
    """``word_slot``'s shift for a table of ``rows`` (a power of two, at least 16) rows."""
    bits = 0
    while (1 << bits) < rows:
        bits += 1
    return np.uint64(64 - bits)


@numba.njit(nogil=True, cache=True)
def fill_word_table(data, offsets, table):  # pragma: no cover  (compiled)
    """Open addressing (linear probing) of word i = data[offsets[i]:offsets[i+1]] into ``table``
    (rows: packed first 8 bytes, length, i + 1; a power-of-two number of rows, at most half
    full; 0 in the last column = empty)."""
    mask = np.uint64(table.shape[0] - 1)
    shift = slot_shift(table.shape[0])
    for w in range(offsets.size - 1):
        lo = offsets[w]
        length = offsets[w + 1] - lo
        packed = packed_word(data, lo, length)
        slot = word_slot(data, lo, length, packed, shift)
        while table[slot, 2] != 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot, 0] = packed
        table[slot, 1] = length
        table[slot, 2] = w + 1


@numba.njit(nogil=True, cache=True)
def utf8_char(b, i, stop):  # pragma: no cover  (compiled)
    """(code point, bytes) of the well-formed UTF-8 character starting at b[i] (a byte >= 128),
    or (-1, 1) when there is none (a stray, overlong or cut sequence); a surrogate's code point is
    returned as it is (the Unicode table refuses it). ``stop``: the text's end. Positions are
    unsigned, as in ``ngram_scan``."""
    at = np.uint64(i)
    end = np.uint64(stop)
    one = np.uint64(1)
    two = np.uint64(2)
    three = np.uint64(3)
    c = np.int64(b[at])
    if 0xC2 <= c <= 0xDF:
        if at + one < end and (b[at + one] & 0xC0) == 0x80:
            return ((c & 0x1F) << 6) | np.int64(b[at + one] & 0x3F), two
    elif 0xE0 <= c <= 0xEF:
        if at + two < end and (b[at + one] & 0xC0) == 0x80 and (b[at + two] & 0xC0) == 0x80:
            cp = ((c & 0x0F) << 12) | (np.int64(b[at + one] & 0x3F) << 6) | np.int64(b[at + two] & 0x3F)
            if cp >= 0x800:
                return cp, three
    elif 0xF0 <= c <= 0xF4:
        if at + three < end and (b[at + one] & 0xC0) == 0x80 and (b[at + two] & 0xC0) == 0x80 \
                and (b[at + three] & 0xC0) == 0x80:
            cp = ((c & 0x07) << 18) | (np.int64(b[at + one] & 0x3F) << 12) \
                | (np.int64(b[at + two] & 0x3F) << 6) | np.int64(b[at + three] & 0x3F)
            if 0x10000 <= cp <= 0x10FFFF:
                return cp, np.uint64(4)
    return -1, one


@numba.njit(nogil=True, cache=True)
def _context_at(b, i, stop, context):  # pragma: no cover  (compiled)
    """(part in the final-sigma rule, bytes) of the character starting at b[i]."""
    c = np.int64(b[i])
    if c < 128:
        return context[c], np.uint64(1)
    cp, size = utf8_char(b, i, stop)
    return (context[cp] if 0 <= cp < context.size else np.uint8(0)), size


@numba.njit(nogil=True, cache=True)
def final_sigma(b, i, start, stop, context):  # pragma: no cover  (compiled)
    """Whether the capital sigma at b[i] (2 bytes) of the text start..stop lowercases to final
    sigma, by Python's rule: the nearest character before it that is not case-ignorable is cased,
    and the nearest after it that is not case-ignorable is not cased (or there is none).
    Whitespace is neither, so neither search leaves the run between separators; each stops at
    the next capital sigma at the latest (it is cased), so a text is read at most three times."""
    at = np.uint64(i)
    first = np.uint64(start)
    cased = False
    while at > first:
        at -= np.uint64(1)
        while at > first and (b[at] & 0xC0) == 0x80:       # back to the character's first byte
            at -= np.uint64(1)
        part, _ = _context_at(b, at, stop, context)
        if part != IGNORABLE:
            cased = part == CASED
            break
    if not cased:
        return False
    at = np.uint64(i) + np.uint64(2)
    end = np.uint64(stop)
    while at < end:
        part, size = _context_at(b, at, stop, context)
        if part != IGNORABLE:
            return part != CASED
        at += size
    return True


@numba.njit(nogil=True, cache=True)
def odd_runs(b, words, head, off, cls, kind, starts, ends, state):  # pragma: no cover  (compiled)
    """The runs between ASCII separators (SPACE bytes or a text's ends) holding a character the
    Unicode table ``kind`` cannot take (OTHER, beyond the table, or malformed: see ``utf8_char``),
    each once, into starts/ends, in one pass over the bytes. ASCII is skipped 8 bytes at a time
    where it can be: ``words`` is b[head:] as aligned 64-bit words (``ascii_words``), so English
    costs a load and a mask per 8 bytes. ``state``: [runs found, 1 if a character beyond U+FFFF
    was seen]. Returns False when ``starts`` is full (start again with more room)."""
    count = 0
    t = 0
    one = np.uint64(1)
    seven = np.uint64(7)
    three = np.uint64(3)
    high = np.uint64(0x8080808080808080)
    head = np.uint64(head)
    n_words = np.uint64(words.size)
    p = np.uint64(0)
    end = np.uint64(b.size)
    while p < end:
        if b[p] < 128:
            p += one
            if p >= head and (p - head) & seven == 0:
                q = (p - head) >> three
                while q < n_words and words[q] & high == 0:
                    q += one
                p = head + (q << three)
            continue
        while off[t + 1] <= np.int64(p):
            t += 1
        cp, size = utf8_char(b, p, off[t + 1])
        if cp >= 0x10000:
            state[1] = 1
        if 0 <= cp < kind.size and kind[cp] != OTHER:
            p += size
            continue
        if count == starts.size:
            return False
        lo = p
        while lo > np.uint64(off[t]) and cls[b[lo - one]] != SPACE:
            lo -= one
        hi = p + one
        while hi < np.uint64(off[t + 1]) and cls[b[hi]] != SPACE:
            hi += one
        starts[count] = np.int64(lo)
        ends[count] = np.int64(hi)
        count += 1
        state[0] = count
        p = hi
    return True


@numba.njit(nogil=True, cache=True)
def _add_byte(byte, packed, length, scratch, max_word):  # pragma: no cover  (compiled)
    """``packed`` with a kept byte added at ``length`` as the ASCII loop adds it: the first 8
    bytes in ``packed``, the rest in ``scratch``."""
    if length < 8:
        return packed | (np.uint64(byte) << np.uint64(8 * length))
    scratch[min(length, max_word)] = byte
    return packed


@numba.njit(nogil=True, cache=True)
def ngram_scan(b, off, cls, lower, kind, kind_offsets, kind_bytes, context,
               word_data, word_offsets, word_table, max_word,
               odd_start, odd_end, odd_offsets, odd_ids,
               n, mul, gram_keys, gram_offsets, gram_windows, gram_last, window_start, window_item, bench_tokens,
               window_hit, item_count, item_first, item_last, text_hit):  # pragma: no cover  (compiled)
    """The contamination scan of a batch in one pass over its bytes (``contamination.scan_batch``).

    Text t is off[t]..off[t+1] of ``b``. Its words are ``wordtokens``' words: runs between
    separators (class-2 bytes, or a character of ``kind`` 2), their class-1 bytes lowercased and
    their non-ASCII characters as the Unicode table has them (kind 1: the bytes
    kind_bytes[kind_offsets[cp]:kind_offsets[cp+1]]; kind 5 the same, a word of its own, ending
    the word before it; kind 0: deleted; capital sigma as
    ``final_sigma`` has it, with the table's ``context``); none if the run keeps
    nothing. A run between ASCII separators holding a character the table cannot take gets its
    word ids ready from the reference definition (odd_start[k] = the run's first byte, its ids
    odd_ids[odd_offsets[k]:odd_offsets[k+1]]). A word's id is its index in the benchmark's
    vocabulary (``word_table``, see ``fill_word_table``; -1: no benchmark item uses it). Every run
    of n known ids is a window: its key is contamination._keys' polynomial hash, kept rolling; a key
    found in ``gram_keys`` is confirmed id by id against that gram (``BenchmarkIndex``), and a
    confirmed gram is reduced at once, once per text (``gram_last``: the last text that matched it,
    -1 at first), into the state ``HitSet`` keeps, so memory is bounded by the benchmark however
    often a text repeats it: window_hit[w] = 1 for each of its windows; per item, the number of
    texts matching it (item_count), the first item_first.shape[1] of them (item_first) and the
    last (item_last, -1 at first; texts come in order); text_hit[t] = 1 for a text with any
    confirmed window. Returns (words, texts with no word).
    """
    ring = np.empty(max(n, 1), dtype=np.int64)
    scratch = np.empty(max_word + 1, dtype=np.uint8)
    mask = np.uint64(word_table.shape[0] - 1)
    shift = slot_shift(word_table.shape[0])
    mul_n = np.uint64(1)
    for _ in range(n):
        mul_n = mul_n * mul
    one = np.uint64(1)
    n_keys = gram_keys.size
    listed = item_first.shape[1]
    words = 0
    silent = 0
    k = 0
    for t in range(off.size - 1):
        before = words
        run = 0
        head = 0
        key = np.uint64(0)
        # Positions unsigned: indexing with them needs no check for negative indices (2x faster).
        i = np.uint64(off[t])
        stop = np.uint64(off[t + 1])
        while i < stop:
            while i < stop and cls[b[i]] == SPACE:
                i += one
            if i >= stop:
                break
            # One run between separators: its ids (one ASCII word or none, or a non-ASCII run's ids).
            if k < odd_start.size and odd_start[k] == np.int64(i):
                first_id = odd_offsets[k]
                last_id = odd_offsets[k + 1]
                i = np.uint64(odd_end[k])
                k += 1
                single = -2
            else:
                packed = np.uint64(0)
                length = 0
                while i < stop:
                    byte = lower[b[i]]
                    if byte > OTHER:
                        # A kept byte: the first 8 in ``packed``, the rest in ``scratch`` (only
                        # those are hashed and compared beyond the packed ones).
                        if length < 8:
                            packed |= np.uint64(byte) << np.uint64(8 * length)
                        else:
                            scratch[min(length, max_word)] = byte
                        length += 1
                    elif byte == SPACE:
                        break
                    elif byte == OTHER:
                        # A character of the table (odd_runs took the rest): whitespace ends the
                        # word (or is skipped before one), a kept one adds its lowercase bytes.
                        cp, size = utf8_char(b, i, stop)
                        how = kind[cp]
                        if how == SPACE:
                            if length:
                                break
                        elif how == KEEP:
                            for j in range(kind_offsets[cp], kind_offsets[cp + 1]):
                                packed = _add_byte(kind_bytes[j], packed, length, scratch, max_word)
                                length += 1
                        elif how == ALONE:          # ends the word (a word of its own: below)
                            break
                        elif how == SIGMA:          # σ (CF 83) or final ς (CF 82)
                            packed = _add_byte(0xCF, packed, length, scratch, max_word)
                            last = 0x82 if final_sigma(b, i, off[t], stop, context) else 0x83
                            packed = _add_byte(last, packed, length + 1, scratch, max_word)
                            length += 2
                        i += size
                        continue
                    i += one
                if length == 0:
                    # Stopped at a word's start by a character of a script written without spaces
                    # (ALONE, the only non-ASCII stop with nothing read): it is the word. Read
                    # here, off the byte loop, which English spends its time in.
                    if i >= stop or b[i] < 128:
                        continue
                    cp, size = utf8_char(b, i, stop)
                    for j in range(kind_offsets[cp], kind_offsets[cp + 1]):
                        packed = _add_byte(kind_bytes[j], packed, length, scratch, max_word)
                        length += 1
                    i += size
                single = -1
                if length <= max_word:
                    # The word table: equal first 8 bytes and length decide a word of up to 8
                    # bytes; a longer one compares the rest.
                    slot = word_slot(scratch, 0, length, packed, shift)
                    while word_table[slot, 2] != 0:
                        if word_table[slot, 0] == packed and np.int64(word_table[slot, 1]) == length:
                            w = np.int64(word_table[slot, 2]) - 1
                            lo = word_offsets[w]
                            same = True
                            for j in range(8, length):
                                if word_data[lo + j] != scratch[j]:
                                    same = False
                                    break
                            if same:
                                single = w
                                break
                        slot = (slot + one) & mask
                first_id = 0
                last_id = 1
            for q in range(first_id, last_id):
                word = single if single != -2 else odd_ids[q]
                words += 1
                if word < 0:
                    run = 0
                    key = np.uint64(0)
                    continue
                key = key * mul + np.uint64(word) + one
                if run >= n:        # the word n back leaves the window (at mul**n after the shift)
                    key = key - (np.uint64(ring[head]) + one) * mul_n
                ring[head] = word
                head += 1           # the ring's next slot, which holds the window's oldest word
                if head == n:
                    head = 0
                run += 1
                if run < n:
                    continue
                # A window of n known words ending here: find its key, confirm the gram's ids.
                lo_k = 0
                hi_k = n_keys
                while lo_k < hi_k:
                    mid = (lo_k + hi_k) >> 1
                    if gram_keys[mid] < key:
                        lo_k = mid + 1
                    else:
                        hi_k = mid
                p = lo_k
                while p < n_keys and gram_keys[p] == key:
                    b0 = window_start[gram_windows[gram_offsets[p]]]
                    same = True
                    r = head
                    for j in range(n):
                        if bench_tokens[b0 + j] != ring[r]:
                            same = False
                            break
                        r += 1
                        if r == n:
                            r = 0
                    if same:
                        text_hit[t] = 1
                        # Once per text and gram, however often the text repeats it.
                        if gram_last[p] != t:
                            gram_last[p] = t
                            for q in range(gram_offsets[p], gram_offsets[p + 1]):
                                w = gram_windows[q]
                                window_hit[w] = 1
                                item = window_item[w]
                                if item_last[item] != t:
                                    item_last[item] = t
                                    if item_count[item] < listed:
                                        item_first[item, item_count[item]] = t
                                    item_count[item] += 1
                        break
                    p += 1
        if words == before:
            silent += 1
    return words, silent


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


@numba.njit(nogil=True, cache=True)
def bounded_intersections(indptr: np.ndarray, indices: np.ndarray, a: np.ndarray, b: np.ndarray,
                          need: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover  (compiled)
    """``intersections``, but a merge stops as soon as its count can no longer reach need[i]
    (out[i] is then some count below need[i]): a failing candidate costs part of a merge."""
    bounded_cross_intersections(indptr, indices, indptr, indices, a, b, need, out)


@numba.njit(nogil=True, cache=True)
def bounded_cross_intersections(indptr_a: np.ndarray, indices_a: np.ndarray, indptr_b: np.ndarray,
                                indices_b: np.ndarray, a: np.ndarray, b: np.ndarray, need: np.ndarray,
                                out: np.ndarray) -> None:  # pragma: no cover  (compiled)
    """``bounded_intersections`` of row a[i] of one CSR matrix and row b[i] of another (both with
    sorted indices over the same columns): no stacked copy of the two."""
    for i in range(a.size):
        p, p_end = indptr_a[a[i]], indptr_a[a[i] + 1]
        q, q_end = indptr_b[b[i]], indptr_b[b[i] + 1]
        count = 0
        target = need[i]
        # Branch-free steps (the comparisons' outcomes are unpredictable), with the bound
        # checked as the merge goes: count + what is left of the shorter list < need: stop.
        while p < p_end and q < q_end:
            x, y = indices_a[p], indices_b[q]
            count += x == y
            p += x <= y
            q += y <= x
            if count + min(p_end - p, q_end - q) < target:
                break
        out[i] = count


# --------------------------------------------------------------------------- word numbering

@numba.njit(nogil=True, cache=True)
def _compare_bytes(data, x, x_end, y, y_end):  # pragma: no cover  (compiled)
    """-1, 0 or 1 as data[x:x_end] is before, equal to or after data[y:y_end] (bytes in order, a
    prefix first: Arrow's order for binary)."""
    while x < x_end and y < y_end:
        if data[x] != data[y]:
            return -1 if data[x] < data[y] else 1
        x += 1
        y += 1
    if x < x_end:
        return 1
    return -1 if y < y_end else 0


@numba.njit(nogil=True, cache=True)
def _compare_words(data, offsets, data_starts, word_starts, a, i, b, j):  # pragma: no cover  (compiled)
    """``_compare_bytes`` of word i of chunk a and word j of chunk b. Chunk c's offsets, local to its
    bytes at data_starts[c], are offsets[word_starts[c] + c:word_starts[c + 1] + c + 1]."""
    oa = word_starts[a] + a + i
    ob = word_starts[b] + b + j
    return _compare_bytes(data, data_starts[a] + offsets[oa], data_starts[a] + offsets[oa + 1],
                          data_starts[b] + offsets[ob], data_starts[b] + offsets[ob + 1])


@numba.njit(nogil=True, cache=True)
def _sift_down(heap, size, node, position, data, offsets, data_starts, word_starts):  # pragma: no cover
    """Restore the min-heap of chunks, keyed by each chunk's current word, below ``node``."""
    while True:
        low = node
        for child in (2 * node + 1, 2 * node + 2):
            if child < size and _compare_words(data, offsets, data_starts, word_starts, heap[child],
                                               position[heap[child]], heap[low], position[heap[low]]) < 0:
                low = child
        if low == node:
            return
        heap[node], heap[low] = heap[low], heap[node]
        node = low


@numba.njit(nogil=True, cache=True)
def merged_dense_ranks(data, offsets, data_starts, word_starts) -> int:  # pragma: no cover  (compiled)
    """The 0-based dense rank of every word of every chunk among them all, each chunk's words sorted
    and distinct (layout: ``_compare_words``), written over the word's start offset once the merge
    has passed it (no later comparison reads it): chunk c's ranks end up in
    offsets[word_starts[c] + c:word_starts[c + 1] + c]. A k-way merge over a heap of chunks: no
    sorted copy, sort index or rank array of all the words. Returns the number of distinct words."""
    k = word_starts.size - 1
    heap = np.empty(k, dtype=np.int64)
    position = np.zeros(k, dtype=np.int64)
    size = 0
    for c in range(k):
        if word_starts[c + 1] > word_starts[c]:
            heap[size] = c
            size += 1
    for node in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, node, position, data, offsets, data_starts, word_starts)
    rank, last, last_end = -1, 0, -1
    while size:
        c = heap[0]
        i = position[c]
        at = word_starts[c] + c + i
        x, x_end = data_starts[c] + offsets[at], data_starts[c] + offsets[at + 1]
        if last_end < 0 or _compare_bytes(data, last, last_end, x, x_end) != 0:
            rank += 1
        offsets[at] = rank
        last, last_end = x, x_end
        position[c] = i + 1
        if word_starts[c] + i + 1 == word_starts[c + 1]:       # chunk done: the last one takes its place
            size -= 1
            heap[0] = heap[size]
        _sift_down(heap, size, 0, position, data, offsets, data_starts, word_starts)
    return rank + 1


def load_word_merge() -> None:
    """Loads the compiled word merge (numba's runtime with it: about 60 MB, once a process) by
    merging two one-byte words, so a measurement counts it in its fixed base (bench/)."""
    merged_dense_ranks(np.frombuffer(b"ab", np.uint8).copy(), np.array([0, 1, 0, 1], np.int32),
                       np.array([0, 1, 2]), np.array([0, 1, 2]))
