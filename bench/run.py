#!/usr/bin/env python
"""Near-duplicate search benchmark: our engine vs datasketch, rensa and a pure-Python
exact all-pairs baseline, on the same machine, the same data and the same shingles.

    python bench/run.py --quick                      # tiny sizes, < 60 s (the smoke test)
    python bench/run.py --sizes 10000,100000 --out bench/results.md
    python bench/run.py --sizes 1000000 --methods ours-lsh,ours-scan --datasets synth

Every measurement runs in its own subprocess (``run.py --worker TASK.json``) so peak
memory (``ru_maxrss``, reported as peak and as growth over the process after it loaded
the data) never mixes between methods. Preparation is the engine's default: lowercase,
whitespace split, 3-word shingles (a text of fewer than 3 words is one shingle), Jaccard
on shingle sets. Every method verifies its candidates with the exact Jaccard, so a
reported pair is never a false positive and recall = pairs found / true pairs.

Data (``--data DIR``, default ``<checkout>/../shared/data``; ``--data bundled`` reads the
repository's own copies, auditor/examples/ and tests/data/): GSM8K train questions,
Spider train questions, and a seeded synthetic series built from real GSM8K + MBPP
questions with word substitutions at known rates (see ``make_synthetic``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]                                  # the checkout
for path in (ROOT, HERE.parent):                        # auditor, and the benchmark's own modules
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# The benchmark in four parts: data (synthetic), the measuring workers, the registry of methods and
# the report. Names other bench scripts import from here are re-exported.
from methods import METHODS, Context, switch_runs  # noqa: E402
from render import arg_line, render  # noqa: E402
from synthetic import (DEFAULT_DATA, DUP_RATES, POOL, REAL, TEMPLATE_MAX, data_dir, jaccard,  # noqa: E402,F401
                       make_synthetic, read_field, shingle_sets, write_dataset)
from workers import CURVE, NUM_PERM, RECALL_AT, worker_main  # noqa: E402,F401


# =========================================================================== orchestrator

class Runner:
    def __init__(self, args, tmp: Path):
        self.args, self.tmp, self.count = args, tmp, 0

    def run(self, kind: str, label: str, **task) -> dict:
        self.count += 1
        task.update(kind=kind, mem_limit_gb=self.args.mem_limit_gb,
                    result=str(self.tmp / f"result{self.count}.json"))
        path = self.tmp / f"task{self.count}.json"
        path.write_text(json.dumps(task))
        print(f"  {label} ...", end="", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, str(HERE), "--worker", str(path)], capture_output=True,
                                  text=True, timeout=self.args.timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            print(f" timeout after {self.args.timeout:.0f} s", file=sys.stderr)
            return {"status": f"timeout (> {self.args.timeout:.0f} s)"}
        elapsed = time.perf_counter() - t0
        result_path = Path(task["result"])
        if code != 0 or not result_path.exists():
            tail = (proc.stderr or "").strip().splitlines()[-3:]
            status = "killed (out of memory?)" if code in (-9, -6, 134, 137) else f"failed (exit {code})"
            print(f" {status}: {' | '.join(tail)}", file=sys.stderr)
            return {"status": status, "error": tail}
        res = json.loads(result_path.read_text())
        res["process_wall"] = elapsed
        if res.get("status") == "ok":
            print(f" {res.get('wall', 0):.2f} s (process {elapsed:.1f} s)", file=sys.stderr)
        else:
            print(f" {res.get('status')} (peak RSS {res.get('peak_rss_mb', 0):,.0f} MB, process {elapsed:.1f} s)",
                  file=sys.stderr)
        return res


def run_cli(source: Path, field: str, repeats: int, timeout: float) -> dict:
    """``auditor scan FILE`` end to end as a user runs it, wall and peak RSS of that process."""
    walls, peaks = [], []
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "auditor", "scan", str(source), "--text", field, "--quiet"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            return {"status": f"failed (exit {proc.returncode})"}
        peaks.append(usage.ru_maxrss / 2 ** 10)
    walls.sort()
    return {"status": "ok", "wall": walls[len(walls) // 2], "wall_min": walls[0], "walls": walls,
            "peak_rss_mb": max(peaks), "rss_before_mb": 0.0, "cli_repeats": repeats,
            "loadavg_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2 ** 20:.1f} GiB"
    except OSError:
        pass
    from importlib.metadata import version
    libs = {}
    for name in ("numpy", "scipy", "datasketch", "rensa"):
        try:
            libs[name] = version(name)
        except Exception:
            libs[name] = "?"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "auditor"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        commit += " (auditor/ has uncommitted changes)" if dirty else ""
    except OSError:
        commit = "?"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "python": platform.python_version(),
            "os": platform.platform(), "libs": libs, "commit": commit}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="tiny sizes; finishes in under a minute")
    p.add_argument("--data", type=data_dir, default=DEFAULT_DATA,
                   help="directory holding gsm8k/, spider/, mbpp/, or 'bundled' (the repository's copies)")
    p.add_argument("--sizes", default="10000", help="synthetic sizes, comma-separated (e.g. 10000,100000,1000000)")
    p.add_argument("--switch-sizes", default="", help="sizes at which to time our exact vs LSH search "
                   "(the auto switch point), e.g. 5000,10000,20000,40000,80000")
    p.add_argument("--datasets", default="gsm8k,spider,synth", help="which of gsm8k, spider, synth to run")
    p.add_argument("--methods", default="", help="only these methods (default all): ours-exact, ours-auto, "
                   "ours-lsh, datasketch, rensa, pure-python, ours-scan, auditor-cli, signatures; "
                   "NAME@0.7 or NAME@0.3 picks one threshold of ours-auto, datasketch, rensa")
    p.add_argument("--seed", type=int, default=20240611)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per measurement before it is abandoned")
    p.add_argument("--mem-limit-gb", type=float, default=16.0, help="address-space cap per measurement")
    p.add_argument("--pure-subset", type=int, default=2000, help="records for the pure-Python baseline")
    p.add_argument("--exact-max", type=int, default=200_000, help="largest set for the exact ground truth")
    p.add_argument("--foreign-max", type=int, default=200_000, help="largest set for datasketch / rensa")
    p.add_argument("--sig-records", type=int, default=20000, help="records for the signatures/s measurement")
    p.add_argument("--cli-repeats", type=int, default=3)
    p.add_argument("--scan-max", type=int, default=20_000, help="largest synthetic set for the full auditor.scan")
    p.add_argument("--template-max", type=int, default=TEMPLATE_MAX,
                   help="records sharing one long template in each synthetic set (0: none)")
    p.add_argument("--switch-template-max", type=int, default=0,
                   help="template block for the --switch-sizes series (default 0: none)")
    p.add_argument("--out", type=Path, help="also write the report (markdown) here")
    p.add_argument("--json", type=Path, help="also write the raw measurements (JSON) here")
    args = p.parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    run_line = arg_line(args, p.parse_args([]))         # before --quick adjusts the settings
    if args.quick:
        args.sizes = "1500"
        args.pure_subset = min(args.pure_subset, 2000)
        args.sig_records = min(args.sig_records, 2000)
        args.cli_repeats = 1
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    switch = [int(s) for s in args.switch_sizes.split(",") if s.strip()]
    wanted = set(filter(None, args.methods.split(","))) or None
    chosen = set(args.datasets.split(","))
    if not (args.data / "gsm8k" / "train.jsonl").exists():
        print(f"error: no data under {args.data} (give --data DIR, or --data bundled)", file=sys.stderr)
        return 2
    info = machine()
    started = time.perf_counter()
    import numpy as np
    results = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()}, "run_line": run_line, "datasets": []}
    with tempfile.TemporaryDirectory(prefix="auditor-bench-") as tmpdir:
        tmp = Path(tmpdir)
        runner = Runner(args, tmp)
        datasets = []
        for name in ("gsm8k", "spider"):
            if name in chosen:
                rel, field = REAL[name]
                texts = read_field(args.data / rel, field)
                source = args.data / rel
                if args.quick:
                    texts = texts[:1000]
                    source = tmp / f"{name}.jsonl"
                    write_dataset(source, texts)
                datasets.append({"name": f"{name} {'first 1,000' if args.quick else 'train'} ({len(texts):,})",
                                 "texts": texts, "source": source, "field": "text" if args.quick else field,
                                 "real": True})
        pool = [t for rel, field in POOL for t in read_field(args.data / rel, field)]
        if "synth" in chosen:
            for n in sizes:
                datasets.append({"name": f"synth-{n:,}" + ("" if args.template_max else " (no template)"),
                                 "n": n, "real": False, "template_max": args.template_max})
        for n in switch:
            datasets.append({"name": f"switch synth-{n:,}", "n": n, "real": False, "switch": True,
                             "template_max": args.switch_template_max})

        for ds in datasets:
            print(f"{ds['name']}:", file=sys.stderr)
            path = tmp / "data.jsonl"
            planted = None
            if not ds["real"]:
                t0 = time.perf_counter()
                texts, pairs, rates = make_synthetic(ds["n"], args.seed, pool, ds["template_max"])
                involved = np.unique(pairs)
                sets = dict(zip(involved.tolist(), shingle_sets([texts[i] for i in involved.tolist()])))
                jac = np.array([jaccard(sets[a], sets[b]) for a, b in pairs.tolist()])
                planted = tmp / "planted.npz"
                np.savez(planted, pairs=pairs, rate=rates, jaccard=jac)
                ds["planted_summary"] = {str(r): [int((rates == r).sum()), float(np.median(jac[rates == r]))]
                                         for r in DUP_RATES}
                ds["template"] = min(ds["template_max"], ds["n"] // 5)
                ds["generate_s"] = time.perf_counter() - t0
                del sets
                write_dataset(path, texts)
                ds["source"], ds["field"] = path, "text"
            else:
                texts = ds["texts"]
                write_dataset(path, texts)
            ds["records"] = len(texts)
            base = dict(data=str(path), planted=str(planted) if planted else None)
            ctx = Context(ds=ds, base=base, runner=runner, args=args, runs={}, wanted=wanted)
            for _, measure in ((("switch", switch_runs),) if ds.get("switch") else METHODS):
                ctx.runs.update(measure(ctx))
            ds["runs"] = ctx.runs
            results["datasets"].append({k: v for k, v in ds.items() if k != "texts"})
    results["total_seconds"] = time.perf_counter() - started
    report = render(results)
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
