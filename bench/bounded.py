#!/usr/bin/env python
"""The bounded engine on hostile shapes, side by side with the engine before it, datasketch
and rensa, in one run (each measurement its own subprocess; peak RSS per process).

    python bench/bounded.py                          # every case below (tens of minutes)
    python bench/bounded.py --cases template-10k,mix-200k --out /tmp/bounded.md
    python bench/bounded.py --quick                  # tiny sizes (the smoke test)

Cases (``shapes.py``): ``template-N`` one 30-word template + a unique word; ``mix-N`` N records
of which a quarter are one template with 1-5% edits, the rest real-question variants;
``edited-N`` real questions copied 10-50 times with 2-50% edits (and shared passages);
``synth-N`` run.py's synthetic series without its template block.

Methods: ``ours`` (find_pairs + curve 0.9-0.3, this checkout), ``scan`` (the whole
``auditor scan`` process, this checkout), ``before`` (find_pairs + curve of the engine at
``--before`` checked out with ``git worktree``), ``datasketch`` and ``rensa`` at 0.7 (their LSH,
candidates verified exactly). A measurement over its time or memory limit is reported as such.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

import run  # noqa: E402  (bench/run.py: its worker and the synthetic series)
import shapes  # noqa: E402

BEFORE = "ab671b8"          # main before the bounded engine (verified pairs all kept)
DEFAULT_CASES = "template-10000,mix-200000,edited-300000,edited-1000000,synth-1000000,synth-5000000"
FOREIGN_UP_TO = 200_000     # datasketch / rensa only on cases up to this size (hours beyond)


def build(case: str, pool: list[str], seed: int) -> list[str]:
    kind, n = case.rsplit("-", 1)
    n = int(n)
    if kind == "template":
        return shapes.template(n, pool)
    if kind == "mix":
        return shapes.template_mix(n, n // 4, pool, seed)
    if kind == "edited":
        return shapes.edited_copies(n, pool, seed)
    if kind == "synth":
        return run.make_synthetic(n, seed, pool, template_max=0)[0]
    raise SystemExit(f"unknown case {case!r}")


def worker(script: Path, task: dict, tmp: Path, timeout: float, label: str) -> dict:
    """One run.py worker task in its own process (run.py measures time and peak RSS)."""
    task = dict(task, result=str(tmp / f"{label}.result.json"))
    path = tmp / f"{label}.task.json"
    path.write_text(json.dumps(task))
    env = dict(os.environ, PYTHONPATH=str(script.parents[1]))
    try:
        proc = subprocess.run([sys.executable, str(script), "--worker", str(path)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=script.parents[1])
    except subprocess.TimeoutExpired:
        return {"status": f"timeout (> {timeout:.0f} s)"}
    result = Path(task["result"])
    if proc.returncode != 0 or not result.exists():
        killed = proc.returncode in (-9, -6, 134, 137)
        tail = " | ".join(proc.stderr.strip().splitlines()[-2:])
        return {"status": "out of memory" if killed or "MemoryError" in tail else f"failed: {tail[-200:]}"}
    return json.loads(result.read_text())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--methods", default="ours,scan,before,datasketch,rensa")
    p.add_argument("--data", default=str(run.DEFAULT_DATA), help="real data folder, or 'bundled'")
    p.add_argument("--before", default=BEFORE, help="git revision of the engine to compare with")
    p.add_argument("--mem-limit-gb", type=float, default=16.0)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="tiny cases, ours and before only")
    p.add_argument("--out", help="write the markdown table here too")
    p.add_argument("--make", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.make:
        run.write_dataset(Path(args.make[1]), build(args.make[0], shapes.read_questions(run.data_dir(args.data)),
                                                    args.seed))
        return 0
    if args.quick:
        args.cases, args.methods, args.data = "template-2000,edited-3000,mix-4000", "ours,scan", "bundled"
    methods = args.methods.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        before_root = None
        if "before" in methods:
            before_root = tmp / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(before_root), args.before], cwd=ROOT,
                           check=True, capture_output=True)
        try:
            for case in args.cases.split(","):
                # Built in a child process: Linux carries a process's peak RSS across fork and exec,
                # so an orchestrator that had held the texts would inflate every worker's peak.
                source = tmp / f"{case}.jsonl"
                subprocess.run([sys.executable, str(HERE), "--make", case, str(source), "--data", args.data,
                                "--seed", str(args.seed)], check=True)
                with open(source, encoding="utf-8") as fh:
                    n = sum(1 for _ in fh)
                print(f"{case}: {n:,} records", file=sys.stderr)
                base = {"data": str(source), "threshold": 0.3, "engine_method": "auto",
                        "mem_limit_gb": args.mem_limit_gb}
                for method in methods:
                    print(f"  {method} ...", file=sys.stderr, flush=True)
                    if method == "ours":
                        res = worker(HERE.parent / "run.py", dict(base, kind="ours"), tmp, args.timeout, f"{case}-ours")
                    elif method == "before":
                        res = worker(before_root / "bench" / "run.py", dict(base, kind="ours"), tmp, args.timeout,
                                     f"{case}-before")
                    elif method == "scan":
                        res = run.run_cli(source, "text", 1, args.timeout)
                    elif method in ("datasketch", "rensa"):
                        if n > FOREIGN_UP_TO:
                            continue
                        res = worker(HERE.parent / "run.py", dict(base, kind="foreign", lib=method, threshold=0.7),
                                     tmp, args.timeout, f"{case}-{method}")
                    else:
                        raise SystemExit(f"unknown method {method!r}")
                    rows.append({"case": case, "records": n, "method": method, **res})
                    print(f"    {res.get('status', 'ok')} {res.get('wall', 0):.1f} s "
                          f"{res.get('peak_rss_mb', 0):.0f} MB", file=sys.stderr)
        finally:
            if before_root is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(before_root)], cwd=ROOT,
                               capture_output=True)
    table = render(rows, args)
    print(table)
    if args.out:
        Path(args.out).write_text(table, encoding="utf-8")
    return 0


def render(rows: list[dict], args) -> str:
    lines = [f"Run: `python bench/bounded.py --cases {args.cases} --methods {args.methods}` "
             f"(memory limit {args.mem_limit_gb:g} GB, timeout {args.timeout:.0f} s per measurement)", "",
             "| case | records | method | status | wall s | peak RSS MB | pairs at 0.9 / 0.7 / 0.5 / 0.3 | "
             "clusters at 0.9 / 0.7 / 0.5 / 0.3 | template groups |",
             "|---|---:|---|---|---:|---:|---|---|---|"]
    for r in rows:
        pairs = r.get("pairs") or {}
        clusters = r.get("clusters") or {}
        pick = (lambda d: " / ".join(f"{d[k]:,}" if isinstance(d.get(k), int) else "-"
                                     for k in ("0.9", "0.7", "0.5", "0.3")))
        wall = f"{r['wall']:.1f}" if "wall" in r else "-"
        peak = f"{r['peak_rss_mb']:,.0f}" if "peak_rss_mb" in r else "-"
        lines.append(f"| {r['case']} | {r['records']:,} | {r['method']} | {r.get('status', 'ok')} | {wall} | {peak} | "
                     f"{pick(pairs)} | {pick(clusters)} | {r.get('template_groups', '')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
