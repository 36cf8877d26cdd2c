#!/usr/bin/env python
"""Resume of ``scan --shard-dir`` on either engine (issue 33, items 5 and 7): the CLI end to end, and
its near-duplicate step (summary.json's ``engine.seconds``, Ray's start included), for

1. a full run with ``--shard-dir`` (every partition computed and saved);
2. a run killed (SIGKILL) after it saved ``--kill-after`` partitions, then its re-run;
3. a re-run once every partition is saved;
4. (local engine) the one-pass scan without --shard-dir, what the pieces cost against.

Each re-run's summary.json is checked to equal the full run's but for the engine block.

    python bench/near_resume.py --engine ray --case edited-100000 --threshold 0.3 --kill-after 3
    python bench/near_resume.py --engine local --case edited-100000 --threshold 0.3 --kill-after 3
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

from ray_near import texts_for  # noqa: E402

HOLD_AFTER_ENV = "AUDITOR_HOLD_AFTER_PIECES"


def cli(args: list, env: dict):
    return subprocess.Popen([sys.executable, "-m", "auditor", *args], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def end_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def timed(args: list, env: dict) -> float:
    start = time.perf_counter()
    proc = cli(args, env)
    try:
        _, err = proc.communicate()
    finally:
        end_group(proc)
    if proc.returncode:
        raise SystemExit(err[-2000:])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=("local", "ray"), default="ray")
    parser.add_argument("--case", default="edited-100000")
    parser.add_argument("--data", default="bundled")
    parser.add_argument("--threshold", type=float, default=0.3)
    parser.add_argument("--kill-after", type=int, default=3, help="partitions saved before the kill")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nrb"))
    source = work / "data.jsonl"
    texts = texts_for(args.case, args.data, 1)
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    env = {**os.environ, "RAY_ADDRESS": "", "RAY_TMPDIR": str(work),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    scan = ["scan", str(source), "--engine", args.engine, "--threshold", str(args.threshold), "--thresholds",
            str(args.threshold), "--quiet"]
    rows = []

    def run(name: str, shard_dir: Path) -> dict:
        out = work / f"{name}.json"
        wall = timed([*scan, "--shard-dir", str(shard_dir), "--json", str(out)], env)
        summary = json.loads(out.read_text(encoding="utf-8"))
        rows.append((name, wall, summary["engine"]))
        return summary

    full = run("full", work / "full")
    full.pop("engine")
    shard_dir = work / "killed"
    start = time.perf_counter()
    proc = cli([*scan, "--shard-dir", str(shard_dir), "--json", str(work / "killed.json")],
               {**env, HOLD_AFTER_ENV: str(args.kill_after)})
    try:
        while len(list(shard_dir.glob("near-*.json")) if shard_dir.exists() else []) < args.kill_after:
            if proc.poll() is not None:
                raise SystemExit(proc.communicate()[1][-2000:])
            time.sleep(0.05)
        killed_at = time.perf_counter() - start
        proc.kill()
        proc.wait()
    finally:
        end_group(proc)
    for name in ("resumed after kill", "all saved"):
        summary = run(name, shard_dir)
        summary.pop("engine")
        assert summary == full, f"{name}: summary.json differs from the full run's"
    one_pass = timed([*scan, "--json", str(work / "one-pass.json")], env) if args.engine == "local" else None
    print(f"{args.engine} engine, {args.case}, {len(texts):,} records, threshold {args.threshold}; killed after "
          f"{args.kill_after} "
          f"partitions were saved ({killed_at:.1f} s into its run)\n")
    print("| run | CLI wall s | near-duplicate step s | partitions resumed |")
    print("|---|---:|---:|---:|")
    for name, wall, engine in rows:
        print(f"| {name} | {wall:.1f} | {engine['seconds']:.1f} | {engine['partitions_resumed']} of "
              f"{engine['partitions']} |")
    if one_pass is not None:
        print(f"| one pass (no --shard-dir) | {one_pass:.1f} | | |")


if __name__ == "__main__":
    main()
