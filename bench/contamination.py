#!/usr/bin/env python
"""Contamination benchmark: n-gram overlap of a benchmark against a training corpus.

    python bench/contamination.py                   # GSM8K test vs train, and a ~200 MB streamed corpus
    python bench/contamination.py --quick           # tiny corpus sizes; what tests/test_bench_smoke.py runs
    python bench/contamination.py --quick --data bundled   # on the repository's own copies of the data

1. GSM8K test (the bundled benchmark) against GSM8K train, 13-grams: the time of
   ``auditor.contamination`` given the train texts already loaded ("after load"), and the
   whole ``auditor contamination`` process, with the rows it reports.
2. Streaming: a JSONL corpus built from the real Alpaca outputs (when the data directory has
   them: ../shared/data does; they are CC BY-NC, so the repository does not) and GSM8K answers,
   repeated up to each target size (every copy's first line carries its copy number, so lines differ),
   with the 164 HumanEval prompts planted once in the last copy. Each size runs as its own
   ``auditor contamination CORPUS --benchmark humaneval`` process; the table gives MB/s
   and that process's peak RSS, which should not grow with the corpus.
3. A benchmark whose 2,000 items share a 13-word template, against texts that hold it: the cost of
   a gram many items share (one confirmation, then each item credited once per text).
4. Greek text in upper and title case (capital sigma, whose lowercase depends on its neighbours),
   against Greek items planted in it: the compiled scan's MB/s, and its matches against the
   definition's (the small-batch path, ``tokenize`` text by text).
5. Chinese text (every character a word of its own) against Chinese items planted in it: the same.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE.parent))
from run import data_dir  # noqa: E402  (bench/run.py: a directory, or "bundled")

DEFAULT_DATA = ROOT.parent / "shared" / "data"


# Runs the CLI and reports that process's own peak RSS and CPU seconds on stderr as it exits.
WRAPPER = ("import atexit, resource, sys\n"
           "atexit.register(lambda: sys.stderr.write('PEAK_KB %d\\nCPU_S %.3f\\n' % ("
           "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
           "resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime)))\n"
           "from auditor.cli import main\n"
           "sys.exit(main(sys.argv[1:]))\n")


def run_process(args: list[str], cpu: list | None = None) -> tuple[float, float, dict]:
    """(wall seconds, peak RSS MB, summary.json) of one `auditor` CLI process; its CPU seconds are
    appended to ``cpu`` when given."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", WRAPPER, *args, "--quiet", "--json", "-"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"auditor {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    peak_kb = [int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK_KB ")]
    if cpu is not None:
        cpu += [float(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("CPU_S ")]
    return wall, peak_kb[-1] / 1024, json.loads(proc.stdout)


def gsm8k_in_train(data: Path, repeats: int) -> list[str]:
    from auditor import load
    from auditor.contamination import contamination
    train = data / "gsm8k" / "train.jsonl"
    t0 = time.perf_counter()
    table = load(str(train))
    texts = [row["question"] for row in table.rows]
    load_s = time.perf_counter() - t0
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = contamination(texts, "gsm8k", ngram=13)
        best = min(best, time.perf_counter() - t0)
    rows = [item["benchmark_row"] for item in result.items]
    wall, peak, summary = run_process(["contamination", str(train), "--benchmark", "gsm8k", "--text", "question",
                                       "--ngram", "13"])
    cli_rows = [item["benchmark_row"] for item in summary["items"]]
    return ["## GSM8K test in GSM8K train (13-grams)", "",
            "| measurement | seconds | benchmark rows found |", "|---|---|---|",
            f"| `contamination(train texts, \"gsm8k\")` after load (best of {repeats}) | {best:.3f} | {rows} |",
            f"| loading GSM8K train ({len(texts):,} rows) | {load_s:.3f} | |",
            f"| whole `auditor contamination` process (peak {peak:,.0f} MB) | {wall:.3f} | {cli_rows} |", ""]


def build_corpus(path: Path, data: Path, target_mb: float) -> int:
    """Write a JSONL corpus of about target_mb from real texts; returns its line count."""
    texts = []
    if (data / "alpaca" / "alpaca_5000.jsonl").exists():
        with open(data / "alpaca" / "alpaca_5000.jsonl", encoding="utf-8") as handle:
            texts += [json.loads(line)["output"] for line in handle if line.strip()]
    with open(data / "gsm8k" / "train.jsonl", encoding="utf-8") as handle:
        texts += [json.loads(line)["answer"] for line in handle if line.strip()]
    with open(data / "humaneval" / "HumanEval.jsonl", encoding="utf-8") as handle:
        planted = [json.loads(line)["prompt"] for line in handle if line.strip()]
    lines = [json.dumps({"text": t}) + "\n" for t in texts]
    block = sum(len(line.encode("utf-8")) for line in lines)
    copies = max(1, round(target_mb * 1024 ** 2 / block))
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for copy in range(copies):
            out.write(json.dumps({"text": f"copy {copy}"}) + "\n")
            out.writelines(lines)
            count += len(lines) + 1
        out.writelines(json.dumps({"text": p}) + "\n" for p in planted)
    return count + len(planted)


def streaming(data: Path, sizes: list[float]) -> list[str]:
    # MB/s is wall time of the whole process (start-up and the benchmark's index included); MB per
    # CPU second is less sensitive to other load on a shared machine. "After start-up" takes off
    # the same process on a corpus just big enough for the compiled scan (imports, numba loading
    # its cached code, the benchmark's index), its bytes and its seconds: the rate a long scan runs at.
    from auditor.contamination import COMPILED_MIN_BYTES
    rows = ["## Streaming a corpus (HumanEval prompts planted once at the end)", "",
            "| corpus | lines | seconds | MB/s | MB/s after start-up | CPU s | MB per CPU s | peak RSS MB "
            "| HumanEval items found |", "|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="auditor-contam-") as tmp:
        tiny = Path(tmp) / "start-up.jsonl"
        build_corpus(tiny, data, 1.5 * COMPILED_MIN_BYTES / 1024 ** 2)
        tiny_mb = tiny.stat().st_size / 1024 ** 2
        startup = min(run_process(["contamination", str(tiny), "--benchmark", "humaneval"])[0] for _ in range(3))
        copies: list = []
        for mb in sizes:
            path = Path(tmp) / f"corpus-{mb:g}.jsonl"
            lines = build_corpus(path, data, mb)
            size_mb = path.stat().st_size / 1024 ** 2
            cpu: list = []
            wall, peak, summary = run_process(["contamination", str(path), "--benchmark", "humaneval"], cpu)
            after = f"{(size_mb - tiny_mb) / (wall - startup):.1f}" if wall > startup + 0.05 else "-"
            rows.append(f"| {size_mb:,.1f} MB | {lines:,} | {wall:.2f} | {size_mb / wall:.1f} | {after} | {cpu[-1]:.2f} | "
                        f"{size_mb / cpu[-1]:.1f} | {peak:,.0f} | {len(summary['items'])} of 164 |")
            # The same scan writing the corpus without its matching records (--decontaminate).
            copy = Path(tmp) / "decontaminated.jsonl"
            d_wall, d_peak, d_summary = run_process(["contamination", str(path), "--benchmark", "humaneval",
                                                     "--decontaminate", str(copy)])
            made = d_summary["decontaminated"]
            with open(copy, "rb") as fh:
                written = sum(1 for _ in fh)
            assert written == made["kept"] == lines - made["dropped"], (written, made, lines)
            copies.append(f"| {size_mb:,.1f} MB | {d_wall:.2f} | {d_wall - wall:.2f} | {d_peak:,.0f} | "
                          f"{made['dropped']:,} | {written:,} |")
            path.unlink()
            copy.unlink()
    return rows + [f"Start-up (the same process on a {tiny_mb:.1f} MB corpus, best of 3): {startup:.2f} s.", "",
                   "With `--decontaminate` (the same scan, then the corpus copied without the matching records):", "",
                   "| corpus | seconds | more than the scan alone | peak RSS MB | records dropped | lines written |",
                   "|---|---|---|---|---|---|", *copies, ""]


def shared_template(texts: int) -> list[str]:
    """A benchmark of 2,000 items that open with one 13-word template (as multiple-choice prompts
    do) against ``texts`` corpus texts that hold it twice: every hit is a gram 2,000 items share.
    Times the compiled scan of the corpus, one batch (``scan_batch``), after a warm-up."""
    import random
    from auditor.contamination import build_index, scan_batch
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()
    template = "the following is a multiple choice question about the subject please answer it"
    bench = [template + " " + " ".join(rng.choice(words) for _ in range(20)) for _ in range(2000)]
    corpus = [f"{template} and again {template} " + " ".join(rng.choice(words) for _ in range(40))
              for _ in range(texts)]
    index = build_index(bench, 13)
    scan_batch(index, corpus[:2000], compiled=True)
    t0 = time.perf_counter()
    scanned = scan_batch(index, corpus, compiled=True)
    seconds = time.perf_counter() - t0
    return ["## A benchmark whose items share a template", "",
            f"{texts:,} corpus texts, each holding the 13-word template all 2,000 items open with: "
            f"{seconds:.2f} s, {int((scanned.item_count > 0).sum()):,} items matched.", ""]


GREEK = ("ΣΩΚΡΑΤΗΣ Σωκράτης ΟΔΥΣΣΕΥΣ Οδυσσέας ΣΗΜΕΡΑ Σήμερα Σύμφωνα ΣΥΜΦΩΝΑ στην ΣΤΗΝ Αθήνα ΑΘΗΝΑ "
         "θάλασσα ΘΑΛΑΣΣΑ ΝΟΜΟΣ νόμος ΝΟΜΟΥΣ της ΤΗΣ πόλης ΠΟΛΗΣ ο Ο καιρός ΚΑΙΡΟΣ είναι ΕΙΝΑΙ καλός "
         "ΚΑΛΟΣ ΠΑΣΧΑ Πάσχα ΙΣΤΟΡΙΑΣ ιστορίας Σ.Σ. ΑΣ' Ελλάς ΕΛΛΑΣ ΤΕΛΟΣ τέλος").split()


def greek_text(texts: int) -> list[str]:
    """``texts`` Greek texts of 40 words (capital sigma first, last and inside words, before
    punctuation), 500 Greek items of 20 words, each planted in one text."""
    import random
    rng = random.Random(0)
    bench = [" ".join(rng.choice(GREEK) for _ in range(20)) for _ in range(500)]
    corpus = [" ".join(rng.choice(GREEK) + rng.choice(("", "", "", ".", ",")) for _ in range(40))
              for _ in range(texts)]
    return planted_scan("Greek text (capital sigma)", bench, corpus)


def chinese_text(texts: int) -> list[str]:
    """``texts`` Chinese texts of 40-120 characters (drawn from 3,000 ideographs, with punctuation),
    500 items of 30-60 characters, each planted in one text: every character is a word."""
    import random
    rng = random.Random(0)
    pool = rng.sample([chr(c) for c in range(0x4E00, 0x9FA6)], 3000)

    def sentence(lo: int, hi: int) -> str:
        return "".join(rng.choice(pool) + ("，" if rng.random() < 0.08 else "") for _ in range(rng.randint(lo, hi)))

    bench = [sentence(30, 60) + "？" for _ in range(500)]
    corpus = [sentence(40, 120) + "。" for _ in range(texts)]
    return planted_scan("Chinese text (each character a word)", bench, corpus)


def planted_scan(title: str, bench: list[str], corpus: list[str]) -> list[str]:
    """Plants each item of ``bench`` in one text of ``corpus``, times the compiled scan
    (``scan_batch``) after a warm-up and checks it against the definition's matches."""
    from auditor import wordtokens
    from auditor.contamination import build_index, scan_batch
    texts = len(corpus)
    for item, row in enumerate(range(0, texts, max(1, texts // 500))):
        corpus[row] += " " + bench[item % len(bench)]
    index = build_index(bench, 13)
    scan_batch(index, corpus[:2000], compiled=True)
    megabytes = sum(len(t.encode()) for t in corpus) / 1e6
    t0 = time.perf_counter()
    scanned = scan_batch(index, corpus, compiled=True)
    seconds = time.perf_counter() - t0
    reference = scan_batch(index, corpus, compiled=False)
    same = (scanned.tokens == reference.tokens and (scanned.item_count == reference.item_count).all()
            and (scanned.item_first == reference.item_first).all())
    b, off = wordtokens.batch_bytes(wordtokens.as_string_array(corpus))
    runs = wordtokens.odd_runs(b, off, index.vocab).starts.size
    return [f"## {title}", "",
            f"{texts:,} texts, {megabytes:.1f} MB, {scanned.tokens:,} words: compiled scan {seconds:.2f} s "
            f"({megabytes / seconds:.1f} MB/s), "
            f"{int((scanned.item_count > 0).sum()):,} items matched, the same as the definition: {same}; "
            f"runs sent to the definition: {runs:,}.", ""]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=data_dir, default=DEFAULT_DATA, help="a data directory, or 'bundled'")
    p.add_argument("--sizes", default="4,40,200", help="corpus sizes in MB, comma-separated")
    p.add_argument("--quick", action="store_true", help="small corpora, one repeat")
    args = p.parse_args()
    sizes = [4.0, 12.0] if args.quick else [float(s) for s in args.sizes.split(",")]
    out = ["# Contamination benchmark", ""]
    out += gsm8k_in_train(args.data, 1 if args.quick else 3)
    out += streaming(args.data, sizes)
    out += shared_template(2_000 if args.quick else 50_000)
    out += greek_text(2_000 if args.quick else 100_000)
    out += chinese_text(2_000 if args.quick else 100_000)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
