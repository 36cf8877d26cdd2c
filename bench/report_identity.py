#!/usr/bin/env python
"""Byte-identical reports: ``auditor scan`` of GSM8K, Spider, MBPP and HumanEval (bundled copies)
at another revision (default ``main``, checked out with ``git worktree``) and at this checkout;
summary.json and REPORT.md are compared byte for byte.

    python bench/report_identity.py                 # against main
    python bench/report_identity.py --base e96ba49  # against a commit

Exit 0 when every pair of files is identical, 1 otherwise (the differing files are named).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, scan arguments): the bundled sets, with the roles their tests use.
CASES = (
    ("gsm8k-train", ["example:gsm8k", "--split", "train"]),
    ("gsm8k-test", ["example:gsm8k", "--split", "test"]),
    ("spider-train", [str(ROOT / "tests/data/spider/train_spider.jsonl.gz"), "--text", "question", "--answer", "query",
                      "--group", "db_id"]),
    ("spider-dev", [str(ROOT / "tests/data/spider/dev.jsonl.gz"), "--text", "question", "--answer", "query",
                    "--group", "db_id"]),
    ("mbpp-full", ["example:mbpp", "--config", "full", "--split", "train"]),
    ("mbpp-test", ["example:mbpp", "--config", "full", "--split", "test"]),
    ("humaneval", ["example:humaneval", "--split", "test"]),
)


def run(checkout: Path, args: list[str], out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    proc = subprocess.run([sys.executable, "-m", "auditor", "scan", *args, "--quiet", "--out-dir", str(out)],
                          cwd=checkout, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout.name}: scan {' '.join(args)} failed: {proc.stderr.strip()[-400:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", default="main", help="git revision to compare with")
    args = p.parse_args(argv)
    differ = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = tmp / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            for name, scan_args in CASES:
                for side, checkout in (("base", base), ("ours", ROOT)):
                    run(checkout, scan_args, tmp / side / name)
                for file in ("summary.json", "REPORT.md"):
                    same = filecmp.cmp(tmp / "base" / name / file, tmp / "ours" / name / file, shallow=False)
                    print(f"{name:14s} {file:13s} {'identical' if same else 'DIFFERENT'}")
                    if not same:
                        differ.append(f"{name}/{file}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    print("all identical" if not differ else f"different: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
