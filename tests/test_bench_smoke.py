"""Smoke test for the benchmark harness: `bench/run.py --quick` runs every method on tiny
data, exits 0 and prints the results table (our exact path at recall 1.0)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest  # noqa: F401  (markers)

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "bench" / "run.py"
DATA = ROOT.parent / "shared" / "data"
METHODS = ("ours-exact", "ours-auto", "ours-lsh", "datasketch", "rensa", "pure-python", "ours-scan", "auditor-cli")


@pytest.mark.slow
def test_quick_benchmark_runs_and_reports_every_method():
    assert (DATA / "gsm8k" / "train.jsonl").exists(), f"benchmark data missing under {DATA.name}/"
    proc = subprocess.run([sys.executable, str(RUN), "--quick", "--data", str(DATA)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert any(line.startswith("| dataset | method |") for line in rows), out[:2000]
    for name in METHODS:
        assert any(f"| {name} |" in line for line in rows), f"no row for {name}\n{out[:3000]}"
    # recall columns R@0.7, R@0.5, R@0.3 are the 11th-13th cells of a results row
    exact_recalls = [cell.strip() for line in rows if "| ours-exact |" in line
                     for cell in line.strip("|").split("|")[10:13]]
    assert "1.000" in exact_recalls, rows
    assert all(r in ("1.000", "–") for r in exact_recalls), exact_recalls
    assert re.search(r"signatures/s", out)
    assert "| yes |" in out                      # exact path == pure-Python nested loops


@pytest.mark.slow
def test_quick_contamination_benchmark_finds_what_it_planted():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "contamination.py"), "--quick", "--data", str(DATA)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    # GSM8K test rows 581, 602 and 632 share a 13-gram with train, in process and through the CLI.
    assert sum("[581, 602, 632]" in line for line in rows) == 2, proc.stdout
    streamed = [line for line in rows if line.endswith("of 164 |")]
    assert len(streamed) == 2 and all("| 164 of 164 |" in line for line in streamed), proc.stdout
