"""The benchmark's n-gram index is bounded by the reading budget, whatever the file holds.

A benchmark file is read within AUDITOR_MAX_BYTES, but its index takes about 12 bytes a character
of text: a 1.7 MB gzip of 728 MiB of words (under the 1 GiB budget) took a process to 21.9 GB. The
index is now built for at most 1/16 of the budget in text, and a larger benchmark is refused with
the way out; the peak memory of the refused run is measured (os.wait4).
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from definitions import read_jsonl, write_jsonl


# The CLI, reporting its own peak at exit: VmHWM of its own memory. (The rusage of a child counts
# the parent's memory at the fork: over 1 GB for a child of this test run.)
MEASURED = ("import atexit, sys\n"
            "def peak():\n"
            "    for line in open('/proc/self/status'):\n"
            "        if line.startswith('VmHWM:'):\n"
            "            sys.stderr.write('PEAK_KB ' + line.split()[1] + '\\n')\n"
            "atexit.register(peak)\n"
            "from auditor.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")


def run_measured(args, env) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MB) of the CLI run with ``args``."""
    proc = subprocess.run([sys.executable, "-c", MEASURED, *map(str, args)], env=env, cwd=str(REPO),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300)
    lines = proc.stderr.splitlines()
    peak = [int(line.split()[1]) for line in lines if line.startswith("PEAK_KB ")]
    assert len(peak) == 1, proc.stderr
    return proc.returncode, "\n".join(line for line in lines if not line.startswith("PEAK_KB ")), peak[0] / 1024


@pytest.mark.sweep
def test_a_benchmark_larger_than_its_index_budget_is_refused_in_bounded_memory(real_data, tmp_path):
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    corpus = tmp_path / "corpus.jsonl"
    write_jsonl(corpus, [{"text": r["question"]} for r in test[:50]])
    # 48 MiB of words in a 2 MB gzip: 150,000 items of about 330 characters
    words = " ".join(r["question"] for r in test[:3])[:320]
    bench = tmp_path / "wide.jsonl.gz"
    with gzip.open(bench, "wt", encoding="utf-8") as fh:
        for i in range(150_000):
            fh.write(json.dumps({"question": f"{words} {i}"}) + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUDITOR_MAX_BYTES": "256M"}      # index limit: 16 MiB
    code, err, peak = run_measured(["contamination", corpus, "--benchmark", bench, "--quiet"], env)
    assert code == 2 and "Traceback" not in err
    assert "wide.jsonl.gz: the benchmark's texts hold more than 16 MiB" in err and "AUDITOR_MAX_BYTES" in err
    assert peak < 900, peak        # the load within its budget, no index (the index alone: ~600 MB)


def test_the_limit_follows_the_reading_budget(real_data, tmp_path, run_cli):
    test = read_jsonl(real_data / "gsm8k/test.jsonl")
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"text": r["answer"]} for r in read_jsonl(real_data / "gsm8k/train.jsonl")[:200]]
    rows[77] = {"text": "Seen online: " + test[5]["question"]}
    write_jsonl(corpus, rows)
    bench = tmp_path / "test.jsonl"
    write_jsonl(bench, test)
    chars = sum(len(r["question"]) for r in test)
    assert 256 * 1024 < chars < 64 * 1024 ** 2                  # over 4M/16, under the default's 1G/16
    code, _, err = run_cli("contamination", corpus, "--benchmark", bench, "--quiet", "--json", tmp_path / "s.json",
                           env={"AUDITOR_MAX_BYTES": "4M"})
    assert code == 2 and "more than 256 KiB" in err and not (tmp_path / "s.json").exists()
    code, _, err = run_cli("contamination", corpus, "--benchmark", bench, "--quiet", "--json", tmp_path / "s.json")
    assert code == 0, err
    items = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["items"]
    assert [(it["benchmark_row"], it["corpus_rows"]) for it in items] == [(5, [77])]
