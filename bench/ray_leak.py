#!/usr/bin/env python
"""Leakage of an eval split in a big training corpus, on one process vs on Ray, start-up excluded.

    python bench/ray_leak.py                    # A: ~200 MB in 8 shards; B: GSM8K test; 2 Ray workers
    python bench/ray_leak.py --mb 20 --shards 4 # smaller
    python bench/ray_leak.py --data bundled     # the repository's own copies of the data

A is bench/contamination.py's corpus (real GSM8K answers, and Alpaca outputs when the data
directory has them, repeated) with five GSM8K test questions planted in its last shard, written
as JSONL shards of equal size; B is GSM8K test (its questions as text). Measured, each best of
``--repeats``:

1. the local engine in this process (``auditor.leakage.leak`` on the folder);
2. ``--engine ray`` on a local Ray with ``--workers`` CPUs, timed after Ray is up and a warm-up
   run has started its workers (Ray's start-up excluded, as on a long-lived cluster).

Both must give the same summary.json apart from the engine block (checked). On a machine shared
with other work, both numbers drop; the ratio is what this measures.
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
from contamination import DEFAULT_DATA  # noqa: E402  (bench/contamination.py)
from ray_contamination import best_of, write_shards  # noqa: E402
from run import data_dir  # noqa: E402

import ray  # noqa: E402

PLANTED = 5


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=data_dir, default=DEFAULT_DATA, help="a data directory, or 'bundled'")
    p.add_argument("--mb", type=float, default=200.0, help="size of A in MB")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--workers", type=int, default=2, help="Ray CPUs")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="a 6 MB A in 4 shards (smoke test)")
    args = p.parse_args()
    if args.quick:
        args.mb, args.shards = 6.0, 4
    from auditor.distributed.leak import ray_leak
    from auditor.leakage import leak
    from auditor.settings import LeakSettings, RoleNames
    test = args.data / "gsm8k" / "test.jsonl"
    questions = [json.loads(line)["question"] for line in test.read_text(encoding="utf-8").splitlines() if line]
    settings = LeakSettings(roles_a=RoleNames(text="text"), roles_b=RoleNames(text="question", answer="answer"))
    with tempfile.TemporaryDirectory(prefix="auditor-ray-leak-") as tmp:
        folder = Path(tmp) / "train"
        folder.mkdir()
        size = write_shards(folder, args.data, args.mb, args.shards)
        last = sorted(folder.iterdir())[-1]
        with open(last, "a", encoding="utf-8") as handle:
            handle.writelines(json.dumps({"text": q}) + "\n" for q in questions[:PLANTED])
        local_s, local = best_of(args.repeats, lambda: leak(str(folder), str(test), settings=settings))
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        try:
            t0 = time.perf_counter()
            warm = Path(tmp) / "warm"
            warm.mkdir()
            for k in range(args.workers * 2):
                (warm / f"w{k}.jsonl").write_text(json.dumps({"text": "warm up the workers"}) + "\n")
            ray_leak(str(warm), str(test), settings=settings, quiet=True)
            startup = time.perf_counter() - t0
            ray_s, on_ray = best_of(args.repeats, lambda: ray_leak(str(folder), str(test), settings=settings,
                                                                   quiet=True))
        finally:
            ray.shutdown()
    summary = on_ray.summary()
    engine = summary.pop("engine")
    same = summary == local.summary()
    rows = ["# Leakage: one process vs Ray", "",
            f"A: {size:,.1f} MB of JSONL in {args.shards} shards ({local.a.records:,} records); B: GSM8K test "
            f"({local.b.records:,} questions; {len(local.matches)} leak, {PLANTED} planted).", "",
            "| engine | seconds | MB/s of A | vs one process |", "|---|---|---|---|",
            f"| local (one process) | {local_s:.2f} | {size / local_s:.1f} | 1.00x |",
            f"| ray, {args.workers} workers (start-up excluded) | {ray_s:.2f} | {size / ray_s:.1f} | "
            f"{local_s / ray_s:.2f}x |", "",
            f"Ray start-up and worker warm-up (excluded above): {startup:.1f} s; candidates verified on Ray: "
            f"{engine['candidates']:,}. Same summary.json apart from the engine block: {same}."]
    print("\n".join(rows))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
