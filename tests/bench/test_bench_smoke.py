"""Smoke tests for the benchmark scripts in bench/: each runs on tiny data, exits 0 and prints
what it measured (so none of them can rot unnoticed; the full runs are in BENCHMARKS.md). They read
``--data bundled``: the repository's own copies of the real data, so no data folder is needed."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.sweep      # a long sweep: run by CI and scripts/test.sh --all

METHODS = ("ours-exact", "ours-auto", "ours-lsh", "datasketch", "rensa", "pure-python", "ours-scan", "auditor-cli")


def run_bench(script: str, *args, timeout: float = 600) -> tuple[str, list[str]]:
    """(stdout, its markdown table rows) of ``bench/SCRIPT ARGS``; fails on a non-zero exit."""
    proc = subprocess.run([sys.executable, str(REPO / "bench" / script), *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, [line for line in proc.stdout.splitlines() if line.startswith("| ")]


@pytest.mark.slow
def test_quick_benchmark_runs_and_reports_every_method():
    out, rows = run_bench("run.py", "--quick", "--data", "bundled")
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
    out, rows = run_bench("contamination.py", "--quick", "--data", "bundled")
    # GSM8K test rows 581, 602 and 632 share a 13-gram with train, in process and through the CLI.
    assert sum("[581, 602, 632]" in line for line in rows) == 2, out
    streamed = [line for line in rows if line.endswith("of 164 |")]
    assert len(streamed) == 2 and all("| 164 of 164 |" in line for line in streamed), out
    # --decontaminate drops the 164 planted prompts, and the copy holds every other line.
    lines = [int(line.split("|")[2].replace(",", "")) for line in streamed]
    copies = [line for line in rows if re.fullmatch(r"\| [\d.]+ MB \| [\d.]+ \| -?[\d.]+ \| [\d,]+ \| 164 \| [\d,]+ \|", line)]
    assert [int(line.split("|")[6].replace(",", "")) for line in copies] == [n - 164 for n in lines], out
    assert "2,000 items matched" in out, out        # every item opens with the template the texts hold
    # Greek and Chinese items planted in their texts are found as the definition finds them, no run
    # sent to the definition.
    assert len(re.findall(r"[1-9]\d* items matched, the same as the definition: True; runs sent to the definition: 0\.",
                          out)) == 2, out


@pytest.mark.slow
def test_micro_benchmarks_run_and_agree():
    """Every micro-measurement's alternative returns what the library returns."""
    out, _ = run_bench("micro.py", "--n", 2000, "--data", "bundled")
    for section in ("1. LSH candidates", "2. verify", "4. GSM8K train", "5. tokenise"):
        assert section in out, out
    assert out.count("identical ids: True") == 1 and out.count("identical: True") == 1, out


def test_bounded_benchmark_runs_on_hostile_shapes():
    """bench/bounded.py --quick: the template, edited-copies and template-mix shapes through the
    engine and the whole CLI, with the pair counts the shapes imply (every template pair)."""
    out, _ = run_bench("bounded.py", "--quick")
    rows = {tuple(cell.strip() for cell in line.split("|")[1:4]): line for line in out.splitlines()
            if line.startswith("| ") and "records" not in line}
    assert ("template-2000", "2,000", "ours") in rows and ("mix-4000", "4,000", "scan") in rows
    template = rows[("template-2000", "2,000", "ours")]
    assert "1,999,000 / 1,999,000 / 1,999,000 / 1,999,000" in template and "| 1 / 1 / 1 / 1 |" in template
    assert all("| ok |" in line for line in rows.values())


def test_curation_benchmark_runs():
    """bench/curation.py --quick: dedup under every keep rule, the cluster ranking and the write, on
    GSM8K train; each keep rule keeps the same number of records (one per cluster)."""
    out, rows = run_bench("curation.py", "--quick", "--data", "bundled")
    kept = {line.split("|")[3].strip(): int(line.split("|")[5].strip().replace(",", ""))
            for line in rows if "| gsm8k |" in line}
    assert {"dedup keep=first", "dedup keep=longest", "dedup keep=most_common_answer", "ranked_clusters",
            "write jsonl + manifest"} <= set(kept), out
    assert kept["dedup keep=first"] == kept["dedup keep=longest"] == kept["dedup keep=most_common_answer"] < 7473


def test_leak_contained_benchmark_runs():
    """bench/leak_contained.py on a 2,000-record A: both cases measured, with the contained count."""
    out, _ = run_bench("leak_contained.py", "--records", 2000, "--repeat", 1)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(lines) == 2 and all(r["wall_s"] > 0 and r["peak_mb"] > 0 for r in lines)
    assert lines[0]["contained"] == lines[0]["text_leak"] == 0       # GSM8K train -> test: none


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ray", "local"])
def test_near_resume_benchmark_runs(engine):
    """bench/near_resume.py on GSM8K train (7,473 questions): a full run, one killed after a
    saved partition and resumed from it, and one with every partition saved."""
    out, rows = run_bench("near_resume.py", "--engine", engine, "--case", "gsm8k", "--kill-after", 1)
    resumed = {line.split("|")[1].strip(): line.split("|")[4].strip() for line in rows[1:] if " of " in line}
    total = resumed["full"].split(" of ")[1]
    assert resumed == {"full": f"0 of {total}", "resumed after kill": f"1 of {total}",
                       "all saved": f"{total} of {total}"}, out


@pytest.mark.slow
def test_cluster_benchmark_measures_every_process():
    """bench/ray_cluster.py --quick: two small scans on a 3-node cluster, each equal to the local
    scan (the script checks), with the driver's and the workers' peaks and the workers' CPU by node."""
    out, rows = run_bench("ray_cluster.py", "--quick")
    measured = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["records"] for r in measured] == [3000, 6000], out[-2000:]
    for r in measured:
        assert r["driver_peak_mb"] > 0 and r["largest_worker_mb"] > 0 and len(r["node_cpu"]) == 3
        assert r["worker_cpu"] > 0 and r["serial"] > 0
    assert len(rows) == 3 and rows[0].startswith("| case |"), out[-2000:]     # the header and a row per case


def test_memory_stages_benchmark_lists_every_scan_stage():
    """bench/memory_stages.py on GSM8K's bundled train split: a row per stage of the scan, and the
    report's, each with memory held and a peak at least as large."""
    _, rows = run_bench("memory_stages.py", "scan", REPO / "auditor/examples/gsm8k/main/train.jsonl.gz",
                        "--text", "question")
    stages = [row.split("|")[1].strip() for row in rows[1:]]
    assert stages == ["load", "roles", "exact", "shingles", "near_duplicates", "curve",
                      "after the last stage (the report)"]
    for row in rows[1:]:
        held, peak = (float(cell) for cell in row.split("|")[2:4])
        assert 0 <= held <= peak
