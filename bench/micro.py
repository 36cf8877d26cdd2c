#!/usr/bin/env python
"""Micro-measurements behind the optimisation notes in BENCHMARKS.md.

    python bench/micro.py                    # synthetic 100k (the bench/run.py recipe) + GSM8K
    python bench/micro.py --n 10000

Each block times a piece of ``auditor`` as it is today against a drop-in alternative
on the same inputs, and checks that both give identical results:

1. de-duplicating LSH candidate codes: ``np.unique`` (numpy 2.x hashes int arrays) vs sort + mask;
2. verifying candidate pairs: ``near.verify`` (sparse fancy-indexing + multiply) vs reading
   the intersections off block sparse products ``nodes[rows] @ nodes.T``;
3. MinHash signatures: ``near.minhash_signatures`` vs rensa fed our CSR matrix;
4. the exact-duplicate step: per-record normalisation cost, and how often it repeats;
5. shingling: Python ``lower().split()`` + dict ids vs pyarrow compute (utf8_lower,
   utf8_split_whitespace, dictionary_encode), and ``np.unique(return_inverse=True)`` on the
   packed window keys vs one argsort.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402

import run as bench  # noqa: E402


def timed(fn, repeats=1):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def sort_unique(x: np.ndarray) -> np.ndarray:
    y = np.sort(x)
    return y[np.concatenate(([True], y[1:] != y[:-1]))] if y.size else y


def verify_by_product(nodes, a, b, budget=8_000_000):
    """Exact Jaccard of pairs (a[i], b[i]) from sparse products: for a block of rows A,
    (nodes[A] @ nodes.T) holds every intersection |x & y| for the rows sharing a shingle
    (the product the exact path computed before it had a prefix filter); read off the
    candidate entries with one searchsorted per block."""
    sizes = np.diff(nodes.indptr).astype(np.int64)
    tr = nodes.T.tocsr()
    order = np.argsort(a, kind="stable")
    a_s, b_s = a[order], b[order]
    rows = np.unique(a_s)
    cost = np.cumsum(nodes[rows] @ np.diff(tr.indptr).astype(np.float64))
    out = np.empty(a.size, dtype=np.float64)
    start = 0
    while start < rows.size:
        stop = max(start + 1, int(np.searchsorted(cost, (cost[start - 1] if start else 0) + budget, "right")))
        block_rows = rows[start:stop]
        prod = (nodes[block_rows] @ tr).tocsr()
        prod.sort_indices()
        lo, hi = np.searchsorted(a_s, block_rows[0]), np.searchsorted(a_s, block_rows[-1], "right")
        local = np.searchsorted(block_rows, a_s[lo:hi])
        key = local.astype(np.int64) * nodes.shape[0] + b_s[lo:hi]
        pkey = np.repeat(np.arange(block_rows.size, dtype=np.int64), np.diff(prod.indptr)) * nodes.shape[0] \
            + prod.indices
        pos = np.searchsorted(pkey, key)
        inter = prod.data[pos].astype(np.float64)
        ia, ib = a_s[lo:hi], b_s[lo:hi]
        out[order[lo:hi]] = inter / (sizes[ia] + sizes[ib] - inter)
        start = stop
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--template-max", type=int, default=bench.TEMPLATE_MAX)
    p.add_argument("--data", type=Path, default=bench.DEFAULT_DATA)
    p.add_argument("--sections", default="1,2,3,4")
    args = p.parse_args()
    from auditor import near
    from auditor.shingles import shingle_matrix

    pool = [t for rel, field in bench.POOL for t in bench.read_field(args.data / rel, field)]
    texts, _, _ = bench.make_synthetic(args.n, 20240611, pool, args.template_max)
    matrix = shingle_matrix(texts)
    _, _, nodes = near.collapse_identical(matrix)
    nodes.sort_indices()
    print(f"synthetic {args.n:,} records, {nodes.shape[0]:,} nodes, {nodes.nnz:,} entries, "
          f"template {min(args.template_max, args.n // 5):,}")

    sections = set(args.sections.split(","))
    if "1" in sections:
        section1(nodes)
    if "2" in sections:
        section2(nodes)
    if "3" in sections:
        section3(nodes)
    if "4" in sections:
        section4(args)
    if "5" in sections:
        section5(texts)
    return 0


def section5(texts):
    from auditor.shingles import _word_tokens
    t_py, (ids_py, len_py) = timed(lambda: _word_tokens(texts))

    def arrow_tokens():
        import pyarrow as pa
        import pyarrow.compute as pc
        words = pc.utf8_split_whitespace(pc.utf8_lower(pa.array(texts, pa.large_string())))
        lengths = pc.list_value_length(words).to_numpy(zero_copy_only=False)
        enc = pc.dictionary_encode(pc.list_flatten(words))
        # ids in sorted word order, as auditor does: rank the dictionary once
        dictionary = enc.dictionary if hasattr(enc, "dictionary") else enc.chunk(0).dictionary
        order = pc.array_sort_indices(dictionary).to_numpy()
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        indices = enc.indices.to_numpy() if hasattr(enc, "indices") else enc.chunk(0).indices.to_numpy()
        return rank[indices], lengths.astype(np.int64)

    t_pa, (ids_pa, len_pa) = timed(arrow_tokens)
    same = np.array_equal(len_py, len_pa) and np.array_equal(ids_py, ids_pa)
    print(f"\n5. tokenise {len(texts):,} texts ({ids_py.size:,} words): auditor _word_tokens {t_py:.2f} s, "
          f"pyarrow compute {t_pa:.2f} s -> {t_py / t_pa:.1f}x; identical ids: {same}")
    keys = ids_py[:-2] * 1_000_003 ** 2 + ids_py[1:-1] * 1_000_003 + ids_py[2:]    # 3-word keys, like _pack
    t_u, (u1, inv1) = timed(lambda: np.unique(keys, return_inverse=True))

    def argsort_inverse(x):
        order = np.argsort(x)
        y = x[order]
        flag = np.concatenate(([True], y[1:] != y[:-1]))
        inv = np.empty(x.size, dtype=np.int64)
        inv[order] = np.cumsum(flag) - 1
        return y[flag], inv

    t_a, (u2, inv2) = timed(lambda: argsort_inverse(keys))
    print(f"   dense shingle ids for {keys.size:,} window keys: np.unique(return_inverse) {t_u:.2f} s, "
          f"argsort + cumsum {t_a:.2f} s -> {t_u / t_a:.1f}x; identical: "
          f"{np.array_equal(u1, u2) and np.array_equal(inv1.reshape(-1), inv2)}")


def section1(nodes):
    from auditor import near
    # 1. LSH candidate de-duplication, on the real per-band codes of this data at 0.3
    bands, rows = near.choose_bands(0.3, 128)
    sig = near.minhash_signatures(nodes, bands * rows, 1)
    per_band = []
    for band in range(bands):
        chunk = np.ascontiguousarray(sig[:, band * rows:(band + 1) * rows])
        bucket = np.unique(chunk.view(np.dtype((np.void, 4 * rows))).reshape(-1), return_inverse=True)[1]
        per_band.append(near.pairs_within_groups(bucket.reshape(-1)))
    codes = np.concatenate(per_band)
    del per_band
    sample = codes[:20_000_000]
    t_np, u1 = timed(lambda: np.unique(sample))
    t_sort, u2 = timed(lambda: sort_unique(sample))
    assert np.array_equal(u1, u2)
    print(f"\n1. LSH candidates at 0.3 (b={bands}, r={rows}): {codes.size:,} band codes, "
          f"{sort_unique(codes).size:,} distinct pairs")
    print(f"   de-duplicate {sample.size:,} codes: np.unique {t_np:.2f} s, sort+mask {t_sort:.2f} s "
          f"({t_np / t_sort:.1f}x)")


def section2(nodes):
    from auditor import near
    # 2. verification, on the exact path's candidates (prefix filter + size filter)
    t_cand, (a, b) = timed(lambda: exact_candidates(nodes, 0.3))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t_v, j1 = timed(lambda: near.verify(nodes, a, b))
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t_p, j3 = timed(lambda: verify_by_product(nodes, a, b))
    rss3 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert np.allclose(j1, j3, rtol=0, atol=1e-12)
    work = int((np.diff(nodes.indptr)[a] + np.diff(nodes.indptr)[b]).sum())
    print(f"\n2. verify {a.size:,} exact-path candidates ({work:,} set entries; candidates found in {t_cand:.2f} s):")
    print(f"   near.verify {t_v:.2f} s (peak RSS so far {rss1:,.0f} MB, was {rss0:,.0f}); "
          f"block products {t_p:.2f} s (peak {rss3:,.0f} MB) -> {t_v / t_p:.1f}x")


def section3(nodes):
    from auditor import near
    # 3. signatures
    from rensa import RMinHash
    t_ours, _ = timed(lambda: near.minhash_signatures(nodes, 128, 1), 2)
    h = nodes.indices.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    off = nodes.indptr.astype(np.uint64)
    t_r, _ = timed(lambda: RMinHash.digest_matrix_from_flat_token_hashes(h, off, 128, 42), 2)
    print(f"\n3. 128 MinHash signatures for {nodes.shape[0]:,} nodes: ours {t_ours:.2f} s, "
          f"rensa (flat hashes + CSR offsets) {t_r:.2f} s -> {t_ours / t_r:.1f}x")


def section4(args):
    # 4. exact-duplicate step on GSM8K train
    from auditor import normalize
    from auditor.exact import key_ids, normalized
    rows = [__import__("json").loads(line) for line in open(args.data / "gsm8k/train.jsonl", encoding="utf-8")]
    q = [r["question"] for r in rows]
    ans = [r["answer"] for r in rows]
    print(f"\n4. GSM8K train ({len(q):,} records), per call over all records:")
    for name in ("exact", "default", "code"):
        tq, _ = timed(lambda: normalized(q, name), 3)
        ta, _ = timed(lambda: normalized(ans, name), 3)
        print(f"   normalized(question, {name!r}) {tq * 1e3:.1f} ms ({tq / len(q) * 1e6:.2f} us/record); "
              f"answer {ta * 1e3:.1f} ms")
    tk, _ = timed(lambda: key_ids(normalized(q, "default")), 3)
    print(f"   key_ids(normalized(question, 'default')) {tk * 1e3:.1f} ms")
    import unicodedata
    ascii_share = sum(s.isascii() for s in q) / len(q)
    t_nfc, _ = timed(lambda: [unicodedata.normalize("NFC", s) for s in q], 3)
    t_nfc_skip, _ = timed(lambda: [s if s.isascii() else unicodedata.normalize("NFC", s) for s in q], 3)
    print(f"   NFC on every question {t_nfc * 1e3:.1f} ms; skipping ASCII texts ({ascii_share:.0%} of them) "
          f"{t_nfc_skip * 1e3:.1f} ms")


def exact_candidates(nodes, t):
    """The exact path's candidate pairs (prefix filter + size filter), without verifying."""
    from auditor import near
    pre = near.prefix_matrix(nodes, t)
    sizes = np.diff(nodes.indptr)
    tr = pre.T.tocsr()
    out_a, out_b = [], []
    bounds = np.cumsum(pre @ np.diff(tr.indptr).astype(np.float64))
    start, n = 0, nodes.shape[0]
    while start < n:
        limit = (bounds[start - 1] if start else 0.0) + near.PRODUCT_BUDGET
        stop = max(start + 1, int(np.searchsorted(bounds, limit, side="right")))
        block = (pre[start:stop] @ tr).tocoo()
        r = block.row.astype(np.int64) + start
        c = block.col.astype(np.int64)
        up = c > r
        r, c = r[up], c[up]
        lo, hi = np.minimum(sizes[r], sizes[c]), np.maximum(sizes[r], sizes[c])
        fits = lo >= t * hi - 1e-9
        out_a.append(r[fits]); out_b.append(c[fits])
        start = stop
    return np.concatenate(out_a), np.concatenate(out_b)


if __name__ == "__main__":
    sys.exit(main())
