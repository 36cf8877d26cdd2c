#!/usr/bin/env python
"""Profile our engine with pyinstrument (``pip install pyinstrument``).

    python bench/profile_engine.py scan-gsm8k                  # auditor.scan on GSM8K train
    python bench/profile_engine.py synth:100000:auto           # shingles + find_pairs(auto, 0.3) + curve
    python bench/profile_engine.py synth:100000:exact synth:100000:lsh --out-dir prof-out

Synthetic sets are the ones bench/run.py builds (same recipe and seed). Each target
prints pyinstrument's call tree (wall clock, frames under 1% hidden); with --out-dir the
text and an HTML view are written there too.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import run as bench  # noqa: E402  (bench/run.py)


def target(spec: str, data: Path, seed: int, threshold: float, template_max: int):
    if spec == "scan-gsm8k" or spec == "scan-spider":
        import auditor
        rel, field = bench.REAL[spec.split("-")[1]]
        return lambda: auditor.scan(str(data / rel), text=field)
    kind, n, method = spec.split(":")
    assert kind == "synth", spec
    pool = [t for rel, field in bench.POOL for t in bench.read_field(data / rel, field)]
    texts, _, _ = bench.make_synthetic(int(n), seed, pool, template_max)
    from auditor.clusters import curve
    from auditor.near import find_pairs
    from auditor.shingles import ShingleSpec, shingle_matrix

    def go():
        pairs = find_pairs(shingle_matrix(texts, ShingleSpec("word", 3)), threshold, method)
        curve(pairs, [t for t in bench.CURVE if t >= threshold - 1e-9])
    return go


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("targets", nargs="+", help="scan-gsm8k, scan-spider, or synth:N:auto|exact|lsh")
    p.add_argument("--data", type=bench.data_dir, default=bench.DEFAULT_DATA)
    p.add_argument("--seed", type=int, default=20240611)
    p.add_argument("--threshold", type=float, default=0.3)
    p.add_argument("--template-max", type=int, default=bench.TEMPLATE_MAX,
                   help="records sharing one template in the synthetic set (0: none)")
    p.add_argument("--interval", type=float, default=0.001, help="sampling interval, seconds")
    p.add_argument("--out-dir", type=Path)
    args = p.parse_args()
    from pyinstrument import Profiler
    import auditor.audit  # noqa: F401  (imports are not part of the profile)
    for spec in args.targets:
        fn = target(spec, args.data, args.seed, args.threshold, args.template_max)
        profiler = Profiler(interval=args.interval)
        t0 = time.perf_counter()
        profiler.start()
        fn()
        profiler.stop()
        wall = time.perf_counter() - t0
        text = profiler.output_text(unicode=True, color=False, show_all=False)
        print(f"===== {spec}: {wall:.2f} s\n{text}")
        if args.out_dir:
            args.out_dir.mkdir(parents=True, exist_ok=True)
            name = spec.replace(":", "_")
            (args.out_dir / f"{name}.txt").write_text(text)
            (args.out_dir / f"{name}.html").write_text(profiler.output_html())
    return 0


if __name__ == "__main__":
    sys.exit(main())
