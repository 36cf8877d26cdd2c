#!/usr/bin/env python
"""``auditor leak`` end to end (the CLI process: wall, CPU, peak RSS) on GSM8K train -> test and on
a 200,000-record A (``shapes.edited_copies`` of GSM8K train's questions, seeded) -> GSM8K test:
what the contained check costs. ``--checkout DIR`` runs another checkout's package (e.g. a
worktree of main, for the figures before it), with this interpreter.

    python bench/leak_contained.py [--records 200000] [--checkout ../main] [--repeat 3]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import edited_copies  # noqa: E402
GSM8K = ROOT / "auditor" / "examples" / "gsm8k" / "main"


def rows(name: str) -> list[dict]:
    with gzip.open(GSM8K / name, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def edited_a(path: Path, records: int, seed: int) -> None:
    """``shapes.edited_copies`` of GSM8K train's questions: copies with 2-50% of words replaced, 40%
    of the sources after a shared passage of 3-6 questions (long A texts holding questions)."""
    texts = edited_copies(records, [r["question"] for r in rows("train.jsonl.gz")], seed=seed)
    path.write_text("".join(json.dumps({"question": t, "n": k}) + "\n" for k, t in enumerate(texts)),
                    encoding="utf-8")


def measure(a: Path, b: Path, checkout: Path) -> dict:
    """One ``auditor leak A B`` process: wall, CPU (user + system) and peak RSS (that child's own,
    by wait4), and its counts."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "auditor", "leak", str(a), str(b), "--text", "question",
                                 "--json", "-", "--quiet"], stdout=subprocess.PIPE, stderr=err, env=env,
                                cwd=str(checkout))
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(err.read().decode(errors="replace"))
    summary = json.loads(out)
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_mb": round(usage.ru_maxrss / 1024), "near": summary["near_duplicate"]["records"],
            "contained": summary.get("contained", {}).get("records"), "text_leak": summary["text_leak"]["records"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the fastest is shown")
    parser.add_argument("--write-a", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_a:
        edited_a(args.write_a, args.records, args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, rel in (("train.jsonl", "train.jsonl.gz"), ("test.jsonl", "test.jsonl.gz")):
            (tmp / name).write_text("".join(json.dumps(r) + "\n" for r in rows(rel)), encoding="utf-8")
        # written by a child process, so this one stays small (a child's peak counts what it inherits)
        subprocess.run([sys.executable, __file__, "--write-a", str(tmp / "a_edited.jsonl"), "--records",
                        str(args.records), "--seed", str(args.seed)], check=True)
        for label, a in (("GSM8K train (7,473)", tmp / "train.jsonl"),
                         (f"edited GSM8K train ({args.records:,})", tmp / "a_edited.jsonl")):
            runs = [measure(a, tmp / "test.jsonl", args.checkout.resolve()) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["wall_s"])
            print(json.dumps({"a": label, "b": "GSM8K test (1,319)", "load": os.getloadavg()[0], **best}), flush=True)


if __name__ == "__main__":
    main()
