"""Curation timings: ``auditor.dedup`` (keep one per cluster, each keep rule, with review marks),
the cluster ranking and the deduplicated file's writing, after one scan, on GSM8K and Spider train
and the synthetic series (bench/synthetic.py). The scan is timed for scale only; everything
after it answers from the scan's cached pairs, so these are the app's click-to-download costs.

    python bench/curation.py --data bundled                 # GSM8K, Spider, synthetic 20k
    python bench/curation.py --data ../shared/data --sizes 100000,1000000
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))

import auditor  # noqa: E402
from auditor.dedup import KEEP_RULES, dedup, ranked_clusters, write_dedup  # noqa: E402
from synthetic import POOL, REAL, data_dir, make_synthetic, read_field  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run(name: str, table, threshold: float, folder: Path) -> list:
    result, scan_s = timed(lambda: auditor.scan(table, settings=auditor.ScanSettings(threshold=threshold,
                                                                                   thresholds=(threshold,))))
    rows = []
    for keep in KEEP_RULES:
        if keep == "most_common_answer" and result.fields.answer is None:
            continue
        d, s = timed(lambda: dedup(result, threshold, keep))
        rows.append((name, result.records, f"dedup keep={keep}", s, len(d.kept_rows), result.pairs.complete))
    ranked, s = timed(lambda: ranked_clusters(result, threshold))
    rows.append((name, result.records, "ranked_clusters", s, len(ranked), result.pairs.complete))
    # 100 review marks: the first pair of each of the 100 largest clusters.
    marks = [c.rows[:2] for c in ranked[:100]]
    d, s = timed(lambda: dedup(result, threshold, "first", marks))
    rows.append((name, result.records, f"dedup with {len(marks)} marks", s, len(d.kept_rows), d.exact))
    out = folder / f"{name}.jsonl"
    _, s = timed(lambda: write_dedup(result, d, out, folder / f"{name}.manifest.csv"))
    rows.append((name, result.records, "write jsonl + manifest", s, len(d.kept_rows), d.exact))
    rows.insert(0, (name, result.records, "scan (for scale)", scan_s, result.near_duplicates(threshold).clusters,
                    result.pairs.complete))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="bundled", help="directory of gsm8k/, spider/ ... or 'bundled'")
    parser.add_argument("--sizes", default="20000", help="synthetic series sizes, comma-separated ('' for none)")
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--quick", action="store_true", help="GSM8K only (smoke test)")
    args = parser.parse_args()
    data = data_dir(args.data)
    tables = []
    for name, (rel, field) in REAL.items():
        tables.append((name, auditor.load(str(data / rel))))
        if args.quick:
            break
    if not args.quick:
        pool = [t for rel, field in POOL for t in read_field(data / rel, field)]
        for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
            texts, _, _ = make_synthetic(n, 1, pool)
            tables.append((f"synthetic-{n // 1000}k", auditor.Table(rows=[{"text": t} for t in texts],
                                                                     source=f"synthetic-{n}")))
    print(f"threshold {args.threshold}; seconds, one run each\n")
    print("| data | records | step | seconds | result | exact/complete |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="auditor-curation-") as tmp:
        for name, table in tables:
            for row in run(name, table, args.threshold, Path(tmp)):
                print(f"| {row[0]} | {row[1]:,} | {row[2]} | {row[3]:.3f} | {row[4]:,} | {row[5]} |", flush=True)


if __name__ == "__main__":
    main()
