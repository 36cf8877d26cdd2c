#!/usr/bin/env python
"""Near duplicates on Ray against the local engine: time and peak memory of the search
(``find_pairs`` vs ``distributed.near.ray_find_pairs`` on a local Ray with ``--workers`` CPUs),
each measurement in its own process. Ray's start-up is excluded: the Ray process first runs a
small search with each method, so its workers are up and have imported the engine.

    python bench/ray_near.py                                   # the cases below
    python bench/ray_near.py --cases gsm8k,edited-100000 --methods exact --out /tmp/ray_near.md
    python bench/ray_near.py --quick                           # tiny cases (a smoke run)

Cases: ``gsm8k`` (GSM8K train questions, bundled), ``edited-N`` (real questions copied 10-50
times with 2-50% of words replaced, shared passages; ``shapes.edited_copies``), ``mix-N`` (a
quarter one template with small edits; ``shapes.template_mix``). Memory: the measuring
process's peak RSS, and for Ray also the peak of the sum over the driver and every process Ray
started (workers, raylet, object store), sampled every 0.1 s. Each row also checks that both
engines give the same record pairs and clusters at 0.9 .. 0.3.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(ROOT / "tests"))

DEFAULT_CASES = "gsm8k,edited-100000,mix-100000,edited-300000"
THRESHOLDS = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]


def texts_for(case: str, data: str, seed: int) -> list[str]:
    import real_data
    if case == "gsm8k":
        return [r["question"] for r in real_data.rows("gsm8k/train.jsonl")]
    import shapes
    if data == "bundled":
        folder = Path(tempfile.mkdtemp())
        real_data.materialize(folder)
    else:
        folder = Path(data)
    pool = shapes.read_questions(folder)
    kind, n = case.rsplit("-", 1)
    if kind == "edited":
        return shapes.edited_copies(int(n), pool, seed)
    if kind == "mix":
        return shapes.template_mix(int(n), int(n) // 4, pool, seed)
    raise SystemExit(f"unknown case {case!r}")


def _tree_rss(root: int) -> int:
    """Bytes resident in process ``root`` and all its descendants (read from /proc, Linux)."""
    parent, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            rss[int(entry)] = int(Path(f"/proc/{entry}/statm").read_text().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [root]
    children: dict = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += children.get(pid, [])
    return total


class PeakRss:
    """Peak of the summed RSS of this process and its descendants (Ray's processes), sampled."""

    def __init__(self):
        self.peak, self.running = 0, True
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while self.running:
            self.peak = max(self.peak, _tree_rss(os.getpid()))
            time.sleep(0.1)

    def stop(self) -> int:
        self.running = False
        self.thread.join()
        return self.peak


def measure(task: dict) -> dict:
    """One search in this process: {seconds, peak_rss_mb, total_rss_mb?, pairs, clusters, ...}."""
    from auditor.clusters import curve
    from auditor.near import find_pairs
    from auditor.shingles import shingle_matrix

    matrix = shingle_matrix(texts_for(task["case"], task["data"], task["seed"]))
    engine, method, t = task["engine"], task["method"], task["threshold"]
    tracker = None
    if engine == "ray":
        import ray
        from auditor.distributed.near import ray_find_pairs
        ray.init(num_cpus=task["workers"], include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        warm = matrix[: min(matrix.shape[0], 3000)]
        for m in ("exact", "lsh"):                  # start-up: workers up, engine imported
            ray_find_pairs(warm, t, m)
        tracker = PeakRss()
        search = lambda: ray_find_pairs(matrix, t, method)                     # noqa: E731
    else:
        search = lambda: find_pairs(matrix, t, method)                         # noqa: E731
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    pairs = search()
    seconds = time.perf_counter() - start
    points = curve(pairs, THRESHOLDS)
    out = {"seconds": round(seconds, 2), "records": matrix.shape[0],
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
           "rss_before_mb": round(before / 1024), "method": pairs.method, "candidates": pairs.candidates,
           "curve": [[p.threshold, p.pairs, p.clusters] for p in points]}
    if tracker is not None:
        out["total_rss_mb"] = round(tracker.stop() / 2 ** 20)
    return out


def run_one(task: dict, timeout: float) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(task, fh)
    env = dict(os.environ, PYTHONPATH=str(ROOT), AUDITOR_THREADS=str(task["workers"]))
    try:
        proc = subprocess.run([sys.executable, str(HERE), "--worker", fh.name], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout (> {timeout:.0f} s)"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"status": "failed: " + " | ".join(proc.stderr.strip().splitlines()[-2:])[-300:]}
    return json.loads(lines[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--methods", default="exact,lsh")
    p.add_argument("--threshold", type=float, default=0.3)
    p.add_argument("--workers", type=int, default=2, help="CPUs of the local Ray (and threads of the local engine)")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="real data folder, or 'bundled'")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--quick", action="store_true", help="tiny cases")
    p.add_argument("--out", help="write the markdown table here too")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(json.loads(Path(args.worker).read_text()))))
        return 0
    cases = "gsm8k,edited-5000" if args.quick else args.cases
    data = "bundled" if args.quick else args.data
    rows = ["| case | method | records | local s | Ray s | local peak MB | Ray driver / total peak MB | same result |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    print(rows[0], rows[1], sep="\n", flush=True)
    for case in cases.split(","):
        for method in args.methods.split(","):
            base = {"case": case, "method": method, "threshold": args.threshold, "workers": args.workers,
                    "data": data, "seed": args.seed}
            local = run_one(dict(base, engine="local"), args.timeout)
            ray_ = run_one(dict(base, engine="ray"), args.timeout)
            both = "curve" in local and "curve" in ray_
            agree = both and (local["curve"], local["candidates"]) == (ray_["curve"], ray_["candidates"])
            same = "-" if not both else "yes" if agree else "NO"
            records = local.get("records", ray_.get("records"))
            row = (f"| {case} | {ray_.get('method', method)} | {records if records is None else f'{records:,}'} | "
                   f"{local.get('seconds', local.get('status'))} | {ray_.get('seconds', ray_.get('status'))} | "
                   f"{local.get('peak_rss_mb', '-')} | {ray_.get('peak_rss_mb', '-')} / "
                   f"{ray_.get('total_rss_mb', '-')} | {same} |")
            rows.append(row)
            print(row, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
