#!/usr/bin/env python
"""The contamination scan on one process vs on Ray: MB/s of corpus, start-up excluded.

    python bench/ray_contamination.py                    # ~200 MB in 8 shards, 2 Ray workers
    python bench/ray_contamination.py --mb 20 --shards 4 # smaller
    python bench/ray_contamination.py --data bundled     # the repository's own copies of the data

The corpus is bench/contamination.py's (real GSM8K answers, and Alpaca outputs when the data
directory has them, repeated, the 164 HumanEval prompts planted at the end), written as JSONL
shards of equal size. Measured, each best of ``--repeats``:

1. the local engine in this process (``auditor.contamination.contamination`` on the folder);
2. ``--engine ray`` on a local Ray with ``--workers`` CPUs (``ray.init(num_cpus=...)``), timed
   after Ray is up and a warm-up scan has started its workers and loaded the compiled scan in
   them (so start-up is excluded, as on a long-lived cluster), from the call to the report. The
   local engine is warmed up the same way.

Both must find the same items (checked). On a machine shared with other work, both numbers drop;
the ratio is what this measures.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))
from contamination import DEFAULT_DATA, build_corpus  # noqa: E402  (bench/contamination.py)
from run import data_dir  # noqa: E402

import ray  # noqa: E402


def write_shards(folder: Path, data: Path, mb: float, shards: int) -> float:
    """``shards`` JSONL files of about mb/shards MB each; returns the total size in MB."""
    whole = folder / "whole.jsonl"
    build_corpus(whole, data, mb)
    lines = whole.read_bytes().splitlines(keepends=True)
    whole.unlink()
    per = -(-len(lines) // shards)
    for k in range(shards):
        (folder / f"part-{k:05d}.jsonl").write_bytes(b"".join(lines[k * per:(k + 1) * per]))
    return sum(p.stat().st_size for p in folder.iterdir()) / 2 ** 20


def best_of(repeats: int, fn):
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=data_dir, default=DEFAULT_DATA, help="a data directory, or 'bundled'")
    p.add_argument("--mb", type=float, default=200.0, help="corpus size in MB")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--workers", type=int, default=2, help="Ray CPUs")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="a 6 MB corpus in 4 shards (smoke test)")
    args = p.parse_args()
    if args.quick:
        args.mb, args.shards = 6.0, 4
    from auditor.contamination import contamination
    from auditor.distributed.contamination import ray_contamination
    with tempfile.TemporaryDirectory(prefix="auditor-ray-contam-") as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        size = write_shards(folder, args.data, args.mb, args.shards)
        # Warm-up texts past wordtokens.SMALL_BYTES, so the compiled scan is loaded too (numba's
        # start-up, ~1.5 s a process, is start-up like Ray's: excluded on both sides).
        from auditor.wordtokens import SMALL_BYTES
        warm_lines = [f"warm up the compiled scan, line {i} " * 8 for i in range(SMALL_BYTES // 200 + 1)]
        contamination(warm_lines, "humaneval")
        local_s, local = best_of(args.repeats, lambda: contamination(str(folder), "humaneval"))
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        try:
            t0 = time.perf_counter()
            warm = Path(tmp) / "warm"
            warm.mkdir()
            for k in range(args.workers * 2):
                (warm / f"w{k}.jsonl").write_text("".join(json.dumps({"text": line}) + "\n" for line in warm_lines))
            ray_contamination(str(warm), "humaneval", quiet=True)
            startup = time.perf_counter() - t0
            ray_s, on_ray = best_of(args.repeats, lambda: ray_contamination(str(folder), "humaneval", quiet=True))
        finally:
            ray.shutdown()
    same = on_ray.items == local.items and on_ray.corpus_tokens == local.corpus_tokens
    rows = ["# Contamination: one process vs Ray", "",
            f"Corpus: {size:,.1f} MB of JSONL in {args.shards} shards ({local.corpus_records:,} records, "
            f"{local.corpus_tokens:,} tokens); benchmark: HumanEval ({len(local.items)} of 164 items found).", "",
            "| engine | seconds | MB/s | vs one process |", "|---|---|---|---|",
            f"| local (one process) | {local_s:.2f} | {size / local_s:.1f} | 1.00x |",
            f"| ray, {args.workers} workers (start-up excluded) | {ray_s:.2f} | {size / ray_s:.1f} | "
            f"{local_s / ray_s:.2f}x |", "",
            f"Ray start-up and worker warm-up (excluded above): {startup:.1f} s. Same items and tokens: {same}."]
    print("\n".join(rows))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
