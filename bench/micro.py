#!/usr/bin/env python
"""Micro-measurements behind the optimisation notes in BENCHMARKS.md.

    python bench/micro.py                    # synthetic 100k (the bench/run.py recipe) + GSM8K
    python bench/micro.py --n 10000

Each block times a piece of ``auditor`` as it is today against an alternative on the same
inputs, and checks that both give identical results:

1. de-duplicating LSH candidate codes: ``near.distinct_rows`` (sort + mask) vs ``np.unique``;
2. verifying the exact path's candidates (``near.PrefixIndex``): ``near.verify`` (sparse
   fancy-indexing + multiply, or the compiled merge) and ``near.verify_candidates`` (threads) vs reading the intersections off block
   sparse products ``nodes[rows] @ nodes.T``;
3. (MinHash signatures: see ``bench/run.py --methods signatures``, which times ours, rensa and
   datasketch side by side);
4. the exact-duplicate step: per-record normalisation cost;
5. shingling: ``shingles.word_tokens`` through Python alone vs its Arrow path, and
   ``shingles.sorted_codes`` vs ``np.unique(return_inverse=True)`` on the packed window keys.
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


def verify_by_product(nodes, a, b, budget=8_000_000):
    """Exact Jaccard of pairs (a[i], b[i]) from sparse products: for a block of rows A,
    (nodes[A] @ nodes.T) holds every intersection |x & y| for the rows sharing a shingle
    (the product the exact path computed before it had a prefix filter); read off the
    candidate entries with one searchsorted per block."""
    sizes = np.diff(nodes.indptr).astype(np.int64)
    nodes = nodes.astype(np.float32)          # a bool product would be "or": counts, not True
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
    p.add_argument("--data", type=bench.data_dir, default=bench.DEFAULT_DATA)
    p.add_argument("--sections", default="1,2,4,5")
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
    if "4" in sections:
        section4(args)
    if "5" in sections:
        section5(texts)
    return 0


def section5(texts):
    from auditor import shingles

    def tokens(arrow_from):
        saved, shingles.ARROW_MIN_TEXTS = shingles.ARROW_MIN_TEXTS, arrow_from
        try:
            return shingles.word_tokens(texts)
        finally:
            shingles.ARROW_MIN_TEXTS = saved

    t_py, (ids_py, len_py) = timed(lambda: tokens(10 ** 12))
    t_pa, (ids_pa, len_pa) = timed(lambda: tokens(0))
    same = np.array_equal(len_py, len_pa) and np.array_equal(ids_py, ids_pa)
    print(f"\n5. tokenise {len(texts):,} texts ({ids_py.size:,} words): Python path {t_py:.2f} s, "
          f"Arrow path {t_pa:.2f} s -> {t_py / t_pa:.1f}x; identical ids: {same}")
    ids = ids_py.astype(np.int64)                  # 3-word keys in int64 (the ids are int32)
    base = int(ids.max()) + 2
    keys = (ids[:-2] * base + ids[1:-1]) * base + ids[2:]
    t_u, (u1, inv1) = timed(lambda: np.unique(keys, return_inverse=True))
    t_s, (count, codes) = timed(lambda: shingles.sorted_codes(keys))
    print(f"   dense shingle ids for {keys.size:,} window keys: np.unique(return_inverse) {t_u:.2f} s, "
          f"shingles.sorted_codes {t_s:.2f} s -> {t_u / t_s:.1f}x; identical: "
          f"{count == u1.size and np.array_equal(inv1.reshape(-1), codes)}")


def section1(nodes):
    from auditor import near
    # 1. LSH candidate de-duplication, on the real per-band codes of this data at 0.3
    bands, rows = near.choose_bands(0.3, 128)
    sig = near.minhash_signatures(nodes, bands * rows, 1)
    codes = np.concatenate([near.lsh_band_pairs(sig, band, rows) for band in range(bands)])
    sample = codes[:20_000_000]
    t_np, u1 = timed(lambda: np.unique(sample))
    t_sort, u2 = timed(lambda: near.distinct_rows(sample))
    assert np.array_equal(u1, u2)
    print(f"\n1. LSH candidates at 0.3 (b={bands}, r={rows}): {codes.size:,} band codes, "
          f"{near.distinct_rows(codes).size:,} distinct pairs")
    print(f"   de-duplicate {sample.size:,} codes: np.unique {t_np:.2f} s, near.distinct_rows {t_sort:.2f} s "
          f"({t_np / t_sort:.1f}x)")


def section2(nodes):
    from auditor import near
    # 2. verification, on the exact path's candidates
    t_cand, (a, b) = timed(lambda: exact_candidates(nodes, 0.3))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t_v, j1 = timed(lambda: near.verify(nodes, a, b))
    t_d, j2 = timed(lambda: near.verify_candidates(nodes, a, b, 0.0)[2].size)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t_p, j3 = timed(lambda: verify_by_product(nodes, a, b))
    rss3 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert np.allclose(j1, j3, rtol=0, atol=1e-12) and j2 == a.size
    work = int((np.diff(nodes.indptr)[a] + np.diff(nodes.indptr)[b]).sum())
    print(f"\n2. verify {a.size:,} exact-path candidates ({work:,} set entries; candidates found in {t_cand:.2f} s):")
    print(f"   near.verify {t_v:.2f} s; near.verify_candidates (threads) {t_d:.2f} s "
          f"(peak RSS so far {rss1:,.0f} MB, was {rss0:,.0f}); block products {t_p:.2f} s (peak {rss3:,.0f} MB) "
          f"-> {t_v / t_p:.1f}x of near.verify")


def section4(args):
    # 4. exact-duplicate step on GSM8K train
    from auditor.exact import key_ids
    from auditor.normalize import normalized
    q = bench.read_field(args.data / "gsm8k/train.jsonl", "question")
    ans = bench.read_field(args.data / "gsm8k/train.jsonl", "answer")
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
    """The exact path's candidate pairs (``near.PrefixIndex``), without verifying."""
    from auditor import near
    n = nodes.shape[0]
    index = near.PrefixIndex(nodes, near.prefix_matrix(nodes, t), t, indexed=n)
    parts = [index.candidates(block) for block in index.blocks((0, n))]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


if __name__ == "__main__":
    sys.exit(main())
