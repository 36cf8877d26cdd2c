#!/usr/bin/env python
"""Near duplicates on the shapes that cost minutes before issue 30 (one subprocess per
measurement, peak RSS of that process): the whole ``auditor scan`` CLI (default curve 0.9..0.3)
at this checkout and at ``--before`` (main, checked out with ``git worktree``), ``--method lsh``
for both, datasketch (MinHashLSH at 0.7, candidates verified; cases up to 200k records) and
datatrove's MinHash pipeline (``bench/datatrove_peer.py``).

    python bench/near_shapes.py                                   # every case (hours: the before engine)
    python bench/near_shapes.py --cases swaps-50000 --methods scan,before
    python bench/near_shapes.py --quick                           # tiny cases (the smoke test)

Cases (``shapes.py``): ``swaps-N`` one 27-word notice + an id word, a third with one word swapped;
``swapmix-N`` N - 50,000 edited copies of real questions + 50,000 ``swaps``; ``synthblock-N`` run.py's
synthetic series + 500,000 (N/4 when smaller) ``swaps``; ``realistic-N`` real questions copied
10-50 times with 2-50% edits, a tenth of the sources behind 40 long instruction templates
(~800M pairs at 0.3 at 1M); ``prefix-N`` one 320-character instruction before edited questions.
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

import bounded  # noqa: E402
import run  # noqa: E402
import shapes  # noqa: E402

DEFAULT_CASES = "swaps-50000,swapmix-200000,prefix-150000,realistic-1000000,synthblock-2000000"
FOREIGN_UP_TO = 200_000


def build(case: str, pool: list[str], seed: int) -> list[str]:
    kind, n = case.rsplit("-", 1)
    n = int(n)
    if kind == "swaps":
        return shapes.template_swaps(n, pool, seed)
    if kind == "swapmix":
        return shapes.swap_mix(n, min(50_000, n // 4), pool, seed)
    if kind == "synthblock":
        return shapes.synth_block(n, min(500_000, n // 4), pool, seed)
    if kind == "realistic":
        return shapes.realistic(n, pool, seed)
    if kind == "prefix":
        return shapes.shared_prefix(n, pool, seed)
    raise SystemExit(f"unknown case {case!r}")


def cli(checkout: Path, source: Path, out: Path, timeout: float, extra=()) -> dict:
    """The whole ``auditor scan`` process: wall, peak RSS, and the curve it wrote."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "scan", str(source), "--text", "text", "--quiet",
                             "--out-dir", str(out), *extra], cwd=checkout, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, status, usage = _wait(proc, timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return {"status": f"timeout (> {timeout:.0f} s)"}
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        return {"status": f"failed: {proc.stderr.read().decode()[-200:]}"}
    summary = json.loads((out / "summary.json").read_text())
    curve = {f"{p['threshold']:g}": p for p in summary["curve"]}
    return {"status": "ok", "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
            "pairs": {t: p["pairs"] for t, p in curve.items()},
            "clusters": {t: p["clusters"] for t, p in curve.items()},
            "estimated": any(p.get("pairs_estimated") for p in curve.values()),
            "template_groups": len(summary["method"].get("template_groups") or ())}


def _wait(proc, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return pid, status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.2)


def datatrove(source: Path, timeout: float) -> dict:
    try:
        proc = subprocess.run([sys.executable, str(HERE.parent / "datatrove_peer.py"), str(source)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout (> {timeout:.0f} s)"}
    if proc.returncode != 0:
        return {"status": f"failed: {proc.stderr.strip()[-200:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--methods", default="scan,scan-lsh,before,before-lsh,datasketch,datatrove")
    p.add_argument("--data", default=str(run.DEFAULT_DATA), help="real data folder, or 'bundled'")
    p.add_argument("--before", default="main", help="git revision of the engine to compare with")
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", help="write the markdown table here too")
    p.add_argument("--make", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.make:
        run.write_dataset(Path(args.make[1]), build(args.make[0], shapes.read_questions(run.data_dir(args.data)),
                                                    args.seed))
        return 0
    if args.quick:
        args.cases, args.methods, args.data = "swaps-3000,swapmix-6000,realistic-5000,prefix-3000", "scan,scan-lsh", \
            "bundled"
    methods = args.methods.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        before_root = None
        if any(m.startswith("before") for m in methods):
            before_root = tmp / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(before_root), args.before], cwd=ROOT,
                           check=True, capture_output=True)
        try:
            for case in args.cases.split(","):
                source = tmp / f"{case}.jsonl"
                subprocess.run([sys.executable, str(HERE), "--make", case, str(source), "--data", args.data,
                                "--seed", str(args.seed)], check=True)
                with open(source, encoding="utf-8") as fh:
                    n = sum(1 for _ in fh)
                print(f"{case}: {n:,} records", file=sys.stderr)
                for method in methods:
                    load = os.getloadavg()[0]
                    print(f"  {method} ...", file=sys.stderr, flush=True)
                    out = tmp / f"{case}-{method}"
                    if method in ("scan", "scan-lsh", "before", "before-lsh"):
                        checkout = ROOT if method.startswith("scan") else before_root
                        res = cli(checkout, source, out, args.timeout,
                                  ("--method", "lsh") if method.endswith("lsh") else ())
                    elif method == "datasketch":
                        if n > FOREIGN_UP_TO:
                            continue
                        res = bounded.worker(HERE.parent / "run.py", {"data": str(source), "threshold": 0.7,
                                                                      "kind": "foreign", "lib": "datasketch",
                                                                      "mem_limit_gb": 16.0},
                                             tmp, args.timeout, f"{case}-{method}")
                    elif method == "datatrove":
                        res = datatrove(source, args.timeout)
                    else:
                        raise SystemExit(f"unknown method {method!r}")
                    rows.append({"case": case, "records": n, "method": method, "load": load, **res})
                    print(f"    {res.get('status', 'ok')} {res.get('wall', 0):.1f} s "
                          f"{res.get('peak_rss_mb', 0):.0f} MB (load {load:.1f})", file=sys.stderr)
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
    lines = [f"Run: `python bench/near_shapes.py --cases {args.cases} --methods {args.methods}` "
             f"(timeout {args.timeout:.0f} s per measurement)", "",
             "| case | records | method | status | wall s | CPU s | peak RSS MB | load | pairs at 0.9 / 0.7 / 0.5 / 0.3 | "
             "clusters at 0.9 / 0.7 / 0.5 / 0.3 | notes |",
             "|---|---:|---|---|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        # datatrove's "clusters" is one count, not a curve: its notes say it
        pick = (lambda d: " / ".join(f"{d[k]:,}" if isinstance(d.get(k), int) else "-"
                                     for k in ("0.9", "0.7", "0.5", "0.3")) if isinstance(d, dict) else "")
        wall = f"{r['wall']:.1f}" if "wall" in r else "-"
        peak = f"{r['peak_rss_mb']:,.0f}" if "peak_rss_mb" in r else "-"
        notes = []
        if r.get("estimated"):
            notes.append("pair counts estimated")
        if r.get("template_groups"):
            notes.append(f"{r['template_groups']} template groups")
        if r["method"] == "datatrove" and r.get("status") == "ok":
            notes.append(f"{r['removed']:,} records removed, {r.get('clusters') or '-'} clusters "
                         f"({r['bands']}x{r['rows']} LSH, unverified)")
        if r["method"] == "datasketch" and r.get("status") == "ok":
            notes.append("at 0.7 only, candidates verified")
        cpu = f"{r['cpu']:.1f}" if "cpu" in r else "-"
        lines.append(f"| {r['case']} | {r['records']:,} | {r['method']} | {r.get('status', 'ok')} | {wall} | {cpu} | {peak} | "
                     f"{r['load']:.1f} | {pick(r.get('pairs'))} | {pick(r.get('clusters'))} | {'; '.join(notes)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
