"""Template groups: many nodes that share most of their shingles (boilerplate, templated
prompts, generated data, a question copied and edited many times). Their pairs are nearly all
similar, so the prefix join would list each one as a sparse candidate; instead each group is
verified by blocked dense products (BLAS) and its pairs are only counted, never listed.

Which nodes form a group: a prefix shingle held by at least ``HEAVY_DF`` prefixes is *heavy*,
and a *template* shingle when the prefixes holding it are typically full of heavy shingles.
Template shingles held by (nearly) the same prefixes mark one template; each node joins the
template it holds most of, and a template's nodes form a candidate group, taken when listing
its candidates sparsely would cost more than scoring all its pairs densely. A phrase that
several templates share bridges their groups instead of merging them (40 instruction
templates chained by common phrases made one group of 53,000 nodes: 2.8 billion products).

Why nothing is missed or counted twice: a pair at or above the threshold shares a prefix
shingle. A template shingle leaves the sparse join only when every prefix holding it is in one
dense group, so a pair sharing it is inside that group, whose pairs are all scored here. Any
other shared prefix shingle stays in the sparse join (which drops pairs inside one dense group).

Within a group, pass 1 counts every pair (exact histograms) and keeps each node's k best
partners; their maximum spanning forest seeds the sink. Pass 2 scores the pairs again and
hands the sink only those the forest does not already imply (and those that may enter the
pair sample), so the forest is exact while almost no pairs leave the kernel. Shingles nearly
every node holds (a template's fixed text) enter the products as a count less each node's few
absences, so the dense products run over the columns that tell nodes apart.

Past the work budget (``join.dense_groups``), pass 1 counts only the pairs of a seeded sample
of rows, one per 16 consecutive rows: an estimate with a 95% interval (``result.EstimatedCounts``),
whose least reliable part, the few high-scoring pairs (copies of one text), is counted exactly
in pass 2 instead. Pass 2 scores every pair still, so clusters stay exact, but cheaply: in a
row outside the sample, a pair scoring below both ends' weakest forest edge to a hub node and
below the exactly counted level changes nothing, and a branch-free pass over the row (no
division) marks the few others; each block's rows are cut into two stretches tested at once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..parallel import thread_map
from ..shingles import entry_rows, kept_entries, set_sizes, shared_columns
from .prefix import entry_slices
from .result import SCORE_SCALE, STRATA
from .sampling import one_per_stretch

HEAVY_DF = 256                # prefix shingle frequency that marks a possible template group
MIN_HEAVY_PER_ROW = 8         # heavy prefix shingles of a typical row of a template column
MIN_NODES = 256               # smaller groups stay with the sparse join
SPARSE_OVER_DENSE = 4.0       # dense when the sparse join's product entries pass this x the group's pairs
FREQUENT_SHARE = 1 / 16       # shingles held by this share of a group go into its dense matrix
COMMON_SHARE = 63 / 64        # ... and those held by this share enter as a count less each row's absences
DENSE_BYTES = 512 << 20       # largest dense (nodes x frequent shingles) float32 matrix of a group
BLOCK_CELLS = 8_000_000       # cells of one block of products (float32: 32 MB)
LINK_SHARE = 0.6             # template columns whose holders overlap this much (of the larger) mark one template
TOP_K = 4                     # best partners per node that seed the forest
EMIT_CAP = 1_000_000          # pairs handed to the sink at once
LEVEL_BINS = 10_000           # score bins per 0.01 level
EMIT_PARTS = 2                # stretches of a block's rows whose forest test runs at once (one per core)


@dataclass(frozen=True)
class DenseGroup:
    ids: np.ndarray           # node ids, ascending
    heavy: np.ndarray         # heavy prefix shingle columns that join it


def plan(nodes: sp.csr_matrix, prefixes: sp.csr_matrix) -> tuple[list[DenseGroup], np.ndarray]:
    """The dense groups, and the prefix matrix left for the sparse join (their heavy shingles removed)."""
    n, m = prefixes.shape
    shared, df = shared_columns(prefixes)
    heavy_cols, heavy_df = shared[df >= HEAVY_DF], df[df >= HEAVY_DF]
    del shared, df
    if not heavy_cols.size or n < MIN_NODES:
        return [], prefixes
    rows, cols = _entries_in(prefixes, heavy_cols, int(heavy_df.sum()))
    # A template's shingles sit in prefixes full of heavy shingles; a common phrase ("how many
    # are") sits mostly in ordinary prefixes with one or two. Keep the heavy columns whose typical
    # (median) row has at least MIN_HEAVY_PER_ROW heavy prefix shingles, so common phrases do not
    # chain unrelated templates into one giant group. The median of a column's rows reaches it when
    # at most half of them (rounded down) fall short: counted, not sorted.
    heaviness = np.bincount(rows, minlength=n)
    short = np.zeros(heavy_cols.size, np.int64)
    for lo in range(0, rows.size, ENTRY_CHUNK):
        c = cols[lo:lo + ENTRY_CHUNK]
        short += np.bincount(c[heaviness[rows[lo:lo + ENTRY_CHUNK]] < MIN_HEAVY_PER_ROW], minlength=heavy_cols.size)
    del heaviness
    is_template = short <= heavy_df // 2
    if not is_template.any():
        return [], prefixes
    template_cols, template_df = heavy_cols[is_template], heavy_df[is_template]
    held = _held(rows, cols, is_template, n)
    del rows, cols
    groups = _template_groups(nodes, template_df, held, template_cols)
    del held
    if not groups:
        return [], prefixes
    drop = np.zeros(m, bool)
    for g in groups:
        drop[g.heavy] = True
    return groups, kept_entries(prefixes, ~drop[prefixes.indices])


ENTRY_CHUNK = 1 << 20       # matrix entries read at a time by the plan: bounds its temporaries


def _entries_in(prefixes: sp.csr_matrix, columns: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, index in ``columns``) of every entry of ``prefixes`` in ``columns`` (ascending), in
    the matrix's order, as int32 (``total`` of them): read ENTRY_CHUNK entries at a time, where
    int64 positions, rows and their sort over every such entry held about 50 bytes an entry (a
    small vocabulary makes every prefix entry one: 40 MB of one-letter words, 5M entries)."""
    wanted = np.zeros(prefixes.shape[1], bool)
    wanted[columns] = True
    rows, cols = np.empty(total, np.int32), np.empty(total, np.int32)
    at = 0
    for lo in range(0, prefixes.indices.size, ENTRY_CHUNK):
        chunk = prefixes.indices[lo:lo + ENTRY_CHUNK]
        hit = np.flatnonzero(wanted[chunk])
        rows[at:at + hit.size] = entry_rows(prefixes.indptr, hit + lo)
        cols[at:at + hit.size] = np.searchsorted(columns, chunk[hit])
        at += hit.size
    return rows, cols


def _held(rows: np.ndarray, cols: np.ndarray, kept: np.ndarray, n: int) -> sp.csr_matrix:
    """Which of the n rows hold which kept column (CSR, n x kept columns, float32 ones: the overlaps
    are products of it), from entries (row ascending, column index) whose columns ``kept`` marks;
    the entries are compacted in place, front to back, and become the matrix's own indices."""
    number = np.cumsum(kept, dtype=np.int64) - 1           # a kept column's index among the kept
    at = 0
    for lo in range(0, rows.size, ENTRY_CHUNK):
        c = cols[lo:lo + ENTRY_CHUNK]
        keep = kept[c]
        count = int(keep.sum())
        r = rows[lo:lo + ENTRY_CHUNK][keep]
        cols[at:at + count] = number[c[keep]]
        rows[at:at + count] = r
        at += count
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows[:at], minlength=n), out=indptr[1:])
    return sp.csr_matrix((np.ones(at, np.float32), cols[:at], indptr), shape=(n, int(kept.sum())))


def _template_groups(nodes, template_df, held, template_cols) -> list[DenseGroup]:
    """Nodes grouped by template. Template columns whose holders (rows) overlap by LINK_SHARE of
    the larger column mark one template (a common phrase that several templates hold is linked to
    none of them unless one holds most of it); a node joins the template of which it holds the
    most columns. A template column leaves the sparse join only when every prefix that holds it
    is in its group (a pair that shares it is then inside the group); a column that bridges groups
    stays in the sparse join, which finds the pairs across groups. ``held``: which prefixes hold
    which template columns (``_held``)."""
    n, k = held.shape
    n_templates, template_of_col = connected_components(_links(held), directed=False)
    template_of_row = _most_held(held, template_of_col, n_templates)
    sizes = set_sizes(nodes)
    by_template = np.argsort(template_of_row, kind="stable")
    labels = template_of_row[by_template]
    bounds = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1], True])
    accepted: list[tuple[np.ndarray, int]] = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        template = int(labels[lo]) if hi > lo else -1
        if template < 0 or hi - lo < MIN_NODES:
            continue
        ids = by_template[lo:hi]                     # ascending: a stable sort of node ids
        sparse_entries = float((template_df[template_of_col == template].astype(np.float64) ** 2).sum()) / 2
        if sparse_entries < SPARSE_OVER_DENSE * ids.size * (ids.size - 1) / 2:
            continue
        frequent = _frequent_columns(nodes[ids])
        if ids.size * frequent.size * 4 > DENSE_BYTES or sizes[ids].max() >= 2 ** 24:
            continue
        accepted.append((ids, template))
    if not accepted:
        return []
    group_of_row = np.full(n, -1, np.int64)
    for i, (ids, _) in enumerate(accepted):
        group_of_row[ids] = i
    # Template columns every prefix holder of which sits in one group leave the sparse join. Per
    # template column, not per column of the matrix (three int64 arrays of every shingle column, 8
    # bytes each: 47 MB apiece for 200,000 edited questions' 6.2M columns); the entries are read a
    # few rows at a time.
    low = np.full(k, np.iinfo(np.int64).max)
    high = np.full(k, -2, np.int64)
    for r0, r1 in entry_slices(held.indptr, 0, held.shape[0], ENTRY_CHUNK):
        s, e = int(held.indptr[r0]), int(held.indptr[r1])
        e_group = np.repeat(group_of_row[r0:r1], np.diff(held.indptr[r0:r1 + 1]))
        np.minimum.at(low, held.indices[s:e], e_group)
        np.maximum.at(high, held.indices[s:e], e_group)
    owner = np.where((low == high) & (high >= 0), high, -1)
    return [DenseGroup(ids=ids, heavy=template_cols[owner == i].astype(np.int64)) for i, (ids, _) in enumerate(accepted)]


def _most_held(held: sp.csr_matrix, template_of_col: np.ndarray, n_templates: int) -> np.ndarray:
    """Each row's template: the one it holds most columns of (ties: the lowest; -1: none), a
    stretch of rows at a time (a product and its sort over every row held 40 bytes an entry)."""
    n, k = held.shape
    assign = sp.csr_matrix((np.ones(k, np.float32), (np.arange(k), template_of_col)), shape=(k, n_templates))
    template_of_row = np.full(n, -1, np.int64)
    for r0, r1 in entry_slices(held.indptr, 0, held.shape[0], ENTRY_CHUNK):
        per_template = (held[r0:r1] @ assign).tocoo()
        if not per_template.nnz:         # rows holding no template column (before a row past the chunk)
            continue
        order = np.lexsort((per_template.col, -per_template.data, per_template.row))
        r, c = per_template.row[order], per_template.col[order]
        first = np.r_[True, r[1:] != r[:-1]]
        template_of_row[r[first] + r0] = c[first]
    return template_of_row


LINK_ENTRIES = 1 << 20      # entries of the column overlaps computed at a time by ``_links``


def _links(held: sp.csr_matrix) -> sp.coo_matrix:
    """The graph (k x k) linking template columns whose holders overlap by LINK_SHARE of the larger
    column, ``held`` being which rows hold which of the k columns. The overlaps are computed a block
    of columns at a time, each block's product holding about LINK_ENTRIES entries, and only the
    links are kept: all k x k overlaps at once held 20 bytes an entry, and a small vocabulary makes
    every column a template column (40 MB of one-letter words: 17,576 columns, 5.9 GB)."""
    k = held.shape[1]
    by_column = held.T.tocsr()
    by_column.data = held.data          # ones, as many: one array of them serves both (4 bytes an entry)
    col_df = np.diff(by_column.indptr).astype(np.float64)
    # A block's product has at most k entries a column, and at most the entries its rows reach.
    reach = np.zeros(k, np.float64)
    for r0, r1 in entry_slices(held.indptr, 0, held.shape[0], ENTRY_CHUNK):
        widths = np.diff(held.indptr[r0:r1 + 1])
        reach += np.bincount(held.indices[held.indptr[r0]:held.indptr[r1]], weights=np.repeat(widths, widths),
                             minlength=k)
    ends = np.cumsum(np.minimum(reach, k))
    del reach
    link_rows, link_cols = [], []
    c0 = 0
    while c0 < k:
        c1 = min(max(int(np.searchsorted(ends, (ends[c0 - 1] if c0 else 0) + LINK_ENTRIES, side="right")), c0 + 1), k)
        overlap = (by_column[c0:c1] @ held).tocoo()
        link = overlap.data >= LINK_SHARE * np.maximum(col_df[overlap.row + c0], col_df[overlap.col])
        link_rows.append((overlap.row[link] + c0).astype(np.int32))
        link_cols.append(overlap.col[link].astype(np.int32))
        del overlap, link
        c0 = c1
    r, c = np.concatenate(link_rows), np.concatenate(link_cols)
    return sp.coo_matrix((np.ones(r.size, np.int8), (r, c)), shape=(k, k))


def _frequent_columns(sub: sp.csr_matrix, df: np.ndarray | None = None) -> np.ndarray:
    df = np.bincount(sub.indices, minlength=sub.shape[1]) if df is None else df
    return np.flatnonzero(df >= max(2, int(np.ceil(FREQUENT_SHARE * sub.shape[0]))))


def group_of(n: int, groups: list[DenseGroup]) -> np.ndarray:
    """Each node's dense group (-1: none)."""
    out = np.full(n, -1, np.int64)
    for i, g in enumerate(groups):
        out[g.ids] = i
    return out


def process(nodes: sp.csr_matrix, group: DenseGroup, min_threshold: float, sink, progress=None, *,
            rate: float | None = None, seed: int = 1) -> int:
    """Count and forest every pair of one group into ``sink``; returns the pairs scored.
    ``progress(fraction, stage)`` follows the blocks of both passes.

    ``rate``: None counts every pair exactly. Otherwise (past the work budget) pass 1 counts only
    the pairs (r, c > r) of a seeded sample of rows r, one per 1 / ``rate`` consecutive rows
    (``sampling.one_per_stretch``; ``sink.add_row_sample``: an estimate with its interval), and
    seeds the forest from their best partners; pass 2 still scores every pair for the forest, so
    clusters stay exact, counts exactly the other rows' pairs at or above the level where pairs
    are few (``_exact_from``), and offers to the pair sample only pairs of sampled rows."""
    from ..kernels import add_sparse_from, bottleneck_bins, dense_count_block, dense_count_rows, dense_emit_block

    ids = group.ids
    sub = nodes[ids]
    sizes = set_sizes(sub).astype(np.int64)
    weight = sink.weight[ids]
    mult = np.ones(ids.size, np.int64) if sink.multiplicity is None else sink.multiplicity[ids]
    df = np.bincount(sub.indices, minlength=sub.shape[1])
    frequent = _frequent_columns(sub, df)
    is_frequent = np.zeros(sub.shape[1], bool)
    is_frequent[frequent] = True
    # Frequent shingles as a dense 0/1 matrix (BLAS); the other shared ones stay sparse. Those
    # nearly every row holds (a template's fixed text) enter as a count less each row's absences
    # (sparse), so the products run over the columns that tell rows apart.
    entry_row = np.repeat(np.arange(ids.size), np.diff(sub.indptr))
    f = is_frequent[sub.indices]
    held = np.zeros((ids.size, frequent.size), bool)
    held[entry_row[f], np.searchsorted(frequent, sub.indices[f])] = True
    common = df[frequent] >= COMMON_SHARE * ids.size
    dense = np.ascontiguousarray(held[:, ~common], dtype=np.float32)
    shared = int(common.sum())
    absent = sp.csr_matrix(~held[:, common], dtype=np.float32)
    missing = np.asarray(absent.sum(axis=1), dtype=np.int64).reshape(-1)
    absent_t = absent.T.tocsr()
    rare_keep = ~f & (df[sub.indices] >= 2)
    rare = sp.csr_matrix((np.ones(int(rare_keep.sum()), np.float32), (entry_row[rare_keep], sub.indices[rare_keep])),
                         shape=sub.shape)
    rare_t = rare.T.tocsr()

    pass_no = [0]
    stages = ("scoring template groups", "joining template groups")

    def products(rows, c0):
        """|x & y| of group rows ``rows`` (a slice or ascending ids) with every row from c0 on,
        less the shared columns' count (``shared - missing[r] - missing[c]``, the kernels add it)."""
        if dense.shape[1] == 1:
            # One column: an outer product writes the block at memory speed (BLAS with k = 1 does not).
            inter = np.multiply.outer(dense[rows, 0], dense[c0:, 0])
        elif dense.shape[1]:
            inter = dense[rows] @ dense[c0:].T
        else:
            inter = np.zeros((len(range(ids.size)[rows]) if isinstance(rows, slice) else rows.size, ids.size - c0),
                             np.float32)
        for left, right in ((rare, rare_t), (absent, absent_t)):
            if right.nnz:
                # All columns, of which the kernel adds those from c0 on: slicing ``right``'s
                # columns would walk all of it.
                extra = left[rows] @ right
                add_sparse_from(inter, extra.indptr, extra.indices, extra.data, c0)
        return inter

    def blocks():
        """Row blocks [r0, r1) and their products with the rows from r0 on (upper triangle)."""
        r0 = 0
        while r0 < ids.size:
            width = ids.size - r0
            r1 = min(ids.size, r0 + max(1, BLOCK_CELLS // width))
            if progress:
                # Cells up to r0 of the upper triangle, in this pass (each pass is half the work).
                progress(0.5 * pass_no[0] + 0.5 * (1 - (width / ids.size) ** 2), stages[pass_no[0]])
            yield r0, products(slice(r0, r1), r0)
            r0 = r1

    size = sink.node_hist.size
    node_hist = np.zeros(size, np.int64)
    record_hist = np.zeros(size, np.int64)
    top_j = np.full((ids.size, TOP_K), -1.0)
    top_n = np.full((ids.size, TOP_K), -1, np.int64)
    scored = ids.size * (ids.size - 1) // 2
    cut = np.iinfo(np.int64).max                 # no pair of pass 2 is counted there
    if rate is None:
        counted_row = np.ones(ids.size, bool)
        for r0, inter in blocks():
            dense_count_block(inter, shared, missing, r0, sizes, weight, mult, min_threshold, sink.base, node_hist,
                              record_hist, top_j, top_n)
        sink.add_counts(node_hist, record_hist)
    else:
        rows = one_per_stretch(ids.size, int(ids[0]), seed, rate)
        counted_row = np.zeros(ids.size, bool)
        counted_row[rows] = True
        rate = 1 / round(1 / rate)
        # Each sampled row's pairs per 0.01 level (score bin // 10,000), for the interval.
        levels = STRATA + 1
        row_node = np.zeros((rows.size, levels), np.int64)
        row_record = np.zeros((rows.size, levels), np.int64)
        at = 0
        while at < rows.size:
            c0 = int(rows[at])
            stop = at + max(1, BLOCK_CELLS // (ids.size - c0))
            if progress:
                progress(0.5 * at / rows.size, stages[0])
            dense_count_rows(products(rows[at:stop], c0), shared, missing, rows[at:stop], c0, sizes, weight, mult,
                             min_threshold, sink.base, node_hist, record_hist, row_node[at:stop], row_record[at:stop],
                             top_j, top_n)
            at = stop
        cut = _exact_from(node_hist, sink.base, rate, rate * scored)
        # Pairs at or above the cut are few: counted exactly (pass 2 counts the other rows' ones).
        k = max(cut - sink.base, 0)
        exact_node, exact_record = np.zeros_like(node_hist), np.zeros_like(record_hist)
        exact_node[k:], exact_record[k:] = node_hist[k:], record_hist[k:]
        node_hist[k:] = record_hist[k:] = 0
        sink.add_counts(exact_node, exact_record)
        squares = []
        for per_row in (row_node, row_record):
            per_row[:, cut // LEVEL_BINS:] = 0
            above = np.cumsum(per_row[:, ::-1], axis=1)[:, ::-1].astype(np.float64)
            squares.append((above * above).sum(axis=0))
        uncounted = scored - int((ids.size - 1 - rows).sum())
        sink.add_row_sample(node_hist, record_hist, *squares, rate, uncounted, cut)
        node_hist[:], record_hist[:] = 0, 0
    pass_no[0] = 1
    # Seed: every node's best partners, each pair once.
    has = top_n >= 0
    a = np.repeat(np.arange(ids.size), TOP_K)[has.reshape(-1)]
    b = top_n[has]
    j = top_j[has]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    _, first = np.unique(lo * ids.size + hi, return_index=True)
    first = np.sort(first)
    sink.add(ids[lo[first]], ids[hi[first]], j[first], counted=True, sample=False)
    sink.compact()
    sink.index_forest()
    # Each block's rows are cut into EMIT_PARTS stretches tested at once (the kernel releases the
    # GIL), each with its own outputs and counts; their outputs reach the sink in row order after
    # both return, so the forest depends neither on timing nor on the number of threads.
    parts = EMIT_PARTS
    outs = [(np.empty(EMIT_CAP, np.int64), np.empty(EMIT_CAP, np.int64), np.empty(EMIT_CAP, np.float64),
             node_hist if k == 0 else np.zeros_like(node_hist), record_hist if k == 0 else np.zeros_like(record_hist))
            for k in range(parts)]
    # The hub: the node most often among the others' best partners; each node's weakest forest
    # edge on its way there lets most pairs be recognised as implied at a glance.
    hub = ids[int(np.argmax(np.bincount(top_n[has], minlength=ids.size)))] if has.any() else ids[0]
    to_hub = np.empty(ids.size, np.int64)
    quiet = np.empty(ids.size, np.float64)
    hubs = np.full(ids.size, hub, np.int64)
    sizes_f, missing_f = sizes.astype(np.float64), missing.astype(np.float64)
    indexed = None
    for r0, inter in blocks():
        bounds = _split_rows(inter.shape[0], ids.size - r0, parts)
        todo = [(k, bounds[k] * inter.shape[1]) for k in range(len(bounds) - 1) if bounds[k] < bounds[k + 1]]
        while todo:
            if sink.tree is not indexed:
                # The forest grew (the sink compacted what this pass emitted): the paths to the hub
                # are read again, so pairs the new edges imply are recognised at a glance.
                indexed = sink.tree
                bottleneck_bins(*sink.tree[:4], ids, hubs, to_hub)
                # A score a little under each row's hub bin and the cut: pairs below it are passed over.
                np.minimum(to_hub, cut, out=quiet)
                quiet /= SCORE_SCALE
                quiet -= 1e-6

            def emit(item, inter=inter, r0=r0, bounds=bounds):
                k, start = item
                out_a, out_b, out_j, n_hist, r_hist = outs[k]
                return dense_emit_block(inter, shared, missing, r0, start, bounds[k + 1], sizes, ids, min_threshold,
                                        to_hub, *sink.tree, sink.floor_j, sink.floor_a, sink.floor_b, STRATA,
                                        counted_row, cut, weight, mult, sink.base, n_hist, r_hist, out_a, out_b,
                                        out_j, quiet, sizes_f, missing_f)

            done = list(thread_map(emit, todo))
            later = []
            for (k, _), (emitted, start) in zip(todo, done):
                if emitted:
                    out_a, out_b, out_j = outs[k][:3]
                    sink.add(out_a[:emitted].copy(), out_b[:emitted].copy(), out_j[:emitted].copy(), counted=True)
                if start >= 0:
                    later.append((k, start))
            todo = later
    for _, _, _, n_hist, r_hist in outs[1:]:
        node_hist += n_hist
        record_hist += r_hist
    if rate is not None:
        sink.add_counts(node_hist, record_hist)
    return scored


def _split_rows(rows: int, width: int, parts: int) -> list[int]:
    """Row bounds that cut a block's upper triangle (row i holds width - 1 - i cells) into
    ``parts`` stretches of about equal cells."""
    cells = np.cumsum(np.maximum(width - 1 - np.arange(rows), 0))
    if parts == 1 or rows < 2 or cells[-1] == 0:
        return [0, rows]
    cuts = np.searchsorted(cells, cells[-1] * np.arange(1, parts) / parts) + 1
    return [0, *np.minimum(cuts, rows).tolist(), rows]


def _exact_from(node_hist: np.ndarray, base: int, rate: float, cap: float) -> int:
    """The lowest 0.01 level (as a score bin) at and above which the sampled rows' pairs stand
    for at most ``cap`` pairs: those are counted exactly (few, and the pairs a row sample
    estimates worst: copies of one text, a handful per row)."""
    above = np.cumsum(node_hist[::-1])[::-1] / rate            # pairs at or above each bin
    levels = np.arange(STRATA + 1) * LEVEL_BINS
    at = np.clip(levels - base, 0, node_hist.size - 1)
    fits = np.flatnonzero((above[at] <= cap) | (levels - base >= node_hist.size))
    return int(levels[fits[0]]) if fits.size else (STRATA + 1) * LEVEL_BINS
